import Fleece
import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Builds query test databases: JSON documents loaded with the storage's bulk-load path (2.8
/// rows, one leaf revision each), or a copy of a fixture bundle (never opened in place).
enum QueryTestSupport {
    static var sharedFixtures: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/fixtures/cbl2")
    }

    static func requireFixtures() throws -> URL {
        let dir = sharedFixtures
        guard FileManager.default.fileExists(atPath: dir.path) else {
            throw XCTSkip("shared fixtures not present (fresh clone)")
        }
        return dir
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-query-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Creates database `name` in `directory` holding `docs` (ID, JSON body), then opens it.
    static func makeDatabase(name: String, in directory: URL, docs: [(String, [String: Any])]) throws -> Database {
        let bundle = directory.appendingPathComponent("\(name).cblite2")
        let file = try DataFile(creatingForBulkLoadAt: bundle)
        for (id, body) in docs {
            let fleece = try FleeceCoding.encode(body, sharedKeys: file.sharedKeys)
            var tree: [UInt8] = []
            let revID = Array("1-\(String(repeating: "ab", count: 20))".utf8)
            _ = revID.withUnsafeBytes {
                LiteCoreRevTree.appendRecord(into: &tree, revID: $0, parentIndex: nil, flags: .leaf, body: fleece)
            }
            LiteCoreRevTree.appendEnd(into: &tree)
            let version = BinaryRevisionID.encode("1-\(String(repeating: "ab", count: 20))")!
            let idBytes = Array(id.utf8)
            try idBytes.withUnsafeBytes { idp in
                try version.withUnsafeBytes { vp in
                    try tree.withUnsafeBytes { tp in
                        _ = try file.insertRecord(docID: idp, flags: [], version: vp, tree: tp)
                    }
                }
            }
        }
        try file.finishBulkLoad()
        file.close()
        var config = DatabaseConfiguration()
        config.directory = directory.path
        return try Database(name: name, config: config)
    }

    /// Copies a fixture bundle to `directory` and opens the copy.
    static func copyFixture(_ bundle: URL, to directory: URL, name: String) throws -> Database {
        let target = directory.appendingPathComponent("\(name).cblite2")
        try FileManager.default.copyItem(at: bundle, to: target)
        var config = DatabaseConfiguration()
        config.directory = directory.path
        return try Database(name: name, config: config)
    }

    /// Documents of a JSON-lines file, IDs = 1-based line number zero-padded to 7 digits.
    static func jsonLines(_ url: URL) throws -> [(String, [String: Any])] {
        let text = try String(contentsOf: url, encoding: .utf8)
        var docs: [(String, [String: Any])] = []
        for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let obj = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            docs.append((String(format: "%07d", docs.count + 1), obj))
        }
        return docs
    }

    /// A canonical text form for comparing values (MISSING, null, booleans, numbers by value).
    static func canonical(_ v: Any?) -> String {
        guard let v else { return "MISSING" }
        switch v {
        case is NSNull: return "null"
        case let b as Bool where type(of: v) == Bool.self: return b ? "true" : "false"
        case let n as NSNumber:
            if String(cString: n.objCType) == "c" { return n.boolValue ? "true" : "false" }
            let d = n.doubleValue
            return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case let s as String: return "\"\(s)\""
        case let a as [Any]: return "[" + a.map { canonical($0) }.joined(separator: ",") + "]"
        case let a as [Any?]: return "[" + a.map { canonical($0) }.joined(separator: ",") + "]"
        case let d as [String: Any]: return "{" + d.keys.sorted().map { "\($0):\(canonical(d[$0]))" }.joined(separator: ",") + "}"
        case let d as DictionaryObject: return canonical(d.toDictionary())
        case let a as ArrayObject: return canonical(a.toArray())
        default: return "\(v)"
        }
    }
}
