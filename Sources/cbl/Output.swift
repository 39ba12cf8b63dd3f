import ArgumentParser
import CouchbaseLite
import Foundation

/// Standard output, buffered: a dump of a large database is millions of lines.
final class Output {
    private var buffer: [UInt8] = []
    private let limit = 1 << 16

    init() { buffer.reserveCapacity(limit + 1024) }

    deinit { flush() }

    func line(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        buffer.append(0x0A)
        if buffer.count >= limit { flush() }
    }

    func line(_ bytes: [UInt8]) {
        buffer.append(contentsOf: bytes)
        buffer.append(0x0A)
        if buffer.count >= limit { flush() }
    }

    func flush() {
        guard !buffer.isEmpty else { return }
        FileHandle.standardOutput.write(Data(buffer))
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Compact JSON with sorted keys (the 1.x canonical form); a value that is not JSON prints as `null`.
func jsonText(_ value: Any?) -> String {
    guard let value else { return "null" }
    return (try? CBLJSON.canonicalString(value)) ?? "null"
}

/// A JSON object line whose members come in the given order (values already JSON text).
func jsonObjectLine(_ members: [(String, String)]) -> String {
    "{" + members.map { jsonText($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
}

/// A JSON value given on the command line (`--key '"abc"'`, `--start-key '[2016,1]'`).
func parseJSONArgument(_ text: String, option: String) throws -> Any {
    do {
        return try parseJSON(text)
    } catch {
        throw CommandFailure("\(option) \(text): not JSON (a string needs quotes: --\(option.drop { $0 == "-" }) '\"\(text)\"')")
    }
}

/// Parses JSON text whose top level may be any value (a bare string or number too).
func parseJSON(_ text: String) throws -> Any {
    try CBLJSON.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
}

/// `name=value` pairs given with a repeatable option (`--param`, `--filter-param`).
func parseAssignments(_ items: [String], option: String) throws -> [(String, String)] {
    try items.map { item in
        guard let eq = item.firstIndex(of: "="), eq != item.startIndex else {
            throw CommandFailure("\(option) \(item): expected NAME=VALUE")
        }
        return (String(item[..<eq]), String(item[item.index(after: eq)...]))
    }
}

/// A plain-text table for a terminal: one header, aligned columns, long cells cut with "…".
struct TextTable {
    let columns: [String]
    private(set) var rows: [[String]] = []
    var maxCellWidth = 60

    init(columns: [String]) { self.columns = columns }

    mutating func add(_ row: [String]) { rows.append(row) }

    func render(into output: Output) {
        let cut = { (s: String) -> String in
            let flat = s.replacingOccurrences(of: "\n", with: " ")
            return flat.count > maxCellWidth ? String(flat.prefix(maxCellWidth - 1)) + "…" : flat
        }
        let cells = rows.map { $0.map(cut) }
        var widths = columns.map(\.count)
        for row in cells {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        func format(_ row: [String]) -> String {
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ")
        }
        output.line(format(columns))
        output.line(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
        for row in cells { output.line(format(row)) }
        output.line("(\(rows.count) row\(rows.count == 1 ? "" : "s"))")
    }
}
