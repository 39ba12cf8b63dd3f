import Foundation

extension ComparisonReport {
    /// The report as pretty-printed JSON (rows, differences with their rules, a summary).
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(JSONReport(self))
    }

    private struct JSONReport: Encodable {
        struct Rule: Encodable {
            let rule: String, title: String, explanation: String, reference: String, count: Int
        }
        let equal: Bool
        let view: String
        let viewOptions: [String: String]
        let query: String
        let matchedBy: String
        let viewRowCount: Int
        let n1qlRowCount: Int
        let unexplainedCount: Int
        let rules: [Rule]
        let differences: [RowDifference]
        let viewRows: [ComparedRow]
        let n1qlRows: [ComparedRow]

        init(_ r: ComparisonReport) {
            equal = r.isEqual
            view = r.view
            viewOptions = r.viewOptions
            query = r.query
            matchedBy = r.matchedBy
            viewRowCount = r.viewRows.count
            n1qlRowCount = r.n1qlRows.count
            unexplainedCount = r.unexplained.count
            rules = r.countsByRule.map {
                Rule(rule: $0.rule.rawValue, title: $0.rule.title, explanation: $0.rule.explanation,
                     reference: $0.rule.reference, count: $0.count)
            }
            differences = r.differences
            viewRows = r.viewRows
            n1qlRows = r.n1qlRows
        }
    }

    /// A terminal report: a summary line, one line per difference and the rules that explain
    /// them. `color` adds ANSI colours (unexplained differences in red).
    public func terminalText(color: Bool, maxDifferences: Int = 200) -> String {
        func paint(_ s: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }
        var out = ""
        let options = viewOptions.isEmpty ? "" : " (" + viewOptions.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + ")"
        out += "view  \(view)\(options): \(viewRows.count) rows\n"
        out += "N1QL  \(query): \(n1qlRows.count) rows\n"
        out += "rows matched by \(matchedBy)\n\n"
        if isEqual {
            out += paint("EQUAL", "1;32") + ": same rows, same order, same values\n"
            return out
        }
        let unexplainedCount = unexplained.count
        out += paint("DIFFERENT", "1;31") + ": \(differences.count) difference\(differences.count == 1 ? "" : "s")"
        out += unexplainedCount > 0 ? ", " + paint("\(unexplainedCount) unexplained", "1;31") : ", all explained"
        out += "\n\n"

        let headers = ["#", "kind", "document", "view key", "N1QL key", "rule"]
        var table: [[String]] = []
        for (i, d) in differences.prefix(maxDifferences).enumerated() {
            let doc = d.viewRow?.documentID ?? d.n1qlRow?.documentID ?? "-"
            table.append([String(i + 1), d.kind.rawValue, doc, Self.cell(d.viewRow?.key), Self.cell(d.n1qlRow?.key), d.rule.rawValue])
        }
        var widths = headers.map(\.count)
        for row in table { for (c, s) in row.enumerated() { widths[c] = min(36, max(widths[c], s.count)) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { c, s in
                let t = s.count > widths[c] ? String(s.prefix(widths[c] - 1)) + "…" : s
                return t + String(repeating: " ", count: widths[c] - t.count)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
        out += paint(line(headers), "1") + "\n"
        for (i, row) in table.enumerated() {
            let text = line(row)
            out += (differences[i].rule == .unexplained ? paint(text, "31") : text) + "\n"
        }
        if differences.count > maxDifferences { out += "… and \(differences.count - maxDifferences) more (see --json or --html)\n" }
        out += "\nrules:\n"
        for (rule, count) in countsByRule {
            let head = "  \(rule.rawValue) ×\(count): \(rule.title)"
            out += (rule == .unexplained ? paint(head, "1;31") : paint(head, "1;33")) + "\n"
            out += "      \(rule.explanation) [\(rule.reference)]\n"
        }
        return out
    }

    static func cell(_ v: ComparedValue?) -> String { v.map(\.json) ?? "" }

    /// One self-contained HTML page: both result lists side by side, differing rows highlighted
    /// and explained (hover a row, or read the list below the tables). No external resources.
    public func html() -> String {
        var viewMarks: [Int: [Int]] = [:], n1qlMarks: [Int: [Int]] = [:]
        for (i, d) in differences.enumerated() {
            if let r = d.viewRow { viewMarks[r.index, default: []].append(i) }
            if let r = d.n1qlRow { n1qlMarks[r.index, default: []].append(i) }
        }
        let esc = HTMLText.escaped
        func rows(_ list: [ComparedRow], _ marks: [Int: [Int]], side: String) -> String {
            var out = ""
            for r in list {
                let ds = marks[r.index] ?? []
                let classes = ds.map { "d-\(differences[$0].kind.rawValue)" + (differences[$0].rule == .unexplained ? " unexplained" : "") }
                let title = ds.map { "#\($0 + 1) \(differences[$0].rule.title): \(differences[$0].detail)" }.joined(separator: "\n")
                out += "<tr id=\"\(side)-\(r.index)\" class=\"\(classes.joined(separator: " "))\" data-diffs=\"\(ds.map { String($0 + 1) }.joined(separator: ","))\" title=\"\(esc(title))\">"
                out += "<td class=n>\(r.index + 1)</td><td>\(esc(r.documentID ?? ""))</td><td><code>\(esc(r.key.json))</code></td><td><code>\(esc(r.value.json))</code></td></tr>\n"
            }
            return out
        }
        var diffItems = ""
        for (i, d) in differences.enumerated() {
            let links = [d.viewRow.map { "<a href=\"#view-\($0.index)\">view row \($0.index + 1)</a>" },
                         d.n1qlRow.map { "<a href=\"#n1ql-\($0.index)\">N1QL row \($0.index + 1)</a>" }].compactMap { $0 }.joined(separator: " · ")
            diffItems += "<li class=\"\(d.rule == .unexplained ? "unexplained" : "explained")\" data-rule=\"\(d.rule.rawValue)\"><b>#\(i + 1) \(esc(d.kind.rawValue))</b> — \(esc(d.detail)) <span class=rule>\(esc(d.rule.title))</span> \(links)</li>\n"
        }
        var ruleItems = ""
        for (rule, count) in countsByRule {
            ruleItems += "<dt class=\"\(rule == .unexplained ? "unexplained" : "explained")\">\(esc(rule.title)) <small>(\(rule.rawValue), \(count)×, \(esc(rule.reference)))</small></dt><dd>\(esc(rule.explanation))</dd>\n"
        }
        let options = viewOptions.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        let verdict = isEqual ? "EQUAL: same rows, same order, same values"
            : "DIFFERENT: \(differences.count) difference\(differences.count == 1 ? "" : "s"), \(unexplained.count) unexplained"
        return """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(esc(view)) vs N1QL</title>
        <style>
        body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
        h1{font-size:1.3em} code{font:12px ui-monospace,monospace}
        .verdict{font-weight:bold;padding:.4em .7em;display:inline-block;border-radius:4px}
        .equal{background:#d8f5d8} .different{background:#fde0e0}
        .sides{display:flex;gap:2em;align-items:flex-start} .side{flex:1;min-width:0;overflow-x:auto}
        table{border-collapse:collapse;width:100%;table-layout:fixed} td,th{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
        th:first-child,td.n{width:2.5em} td code{white-space:pre-wrap;word-break:break-all}
        td.n{color:#888;text-align:right}
        tr.d-only-in-view,tr.d-only-in-n1ql{background:#fff3c4} tr.d-key-differs,tr.d-value-differs{background:#ffe3c4}
        tr.d-order-differs{background:#e3ecff} tr.unexplained{background:#ffc9c9 !important;font-weight:bold}
        li.unexplained,dt.unexplained{color:#b00000;font-weight:bold} .rule{background:#eee;border-radius:3px;padding:0 4px}
        :target{outline:2px solid #333}
        </style></head><body>
        <h1>View <code>\(esc(view))</code> vs N1QL</h1>
        <p>View options: \(options.isEmpty ? "none" : esc(options))<br>N1QL: <code>\(esc(query))</code><br>Rows matched by \(esc(matchedBy)).</p>
        <p class="verdict \(isEqual ? "equal" : "different")" id="verdict" data-differences="\(differences.count)" data-unexplained="\(unexplained.count)">\(esc(verdict))</p>
        <p id="highlighted"></p>
        <div class="sides">
        <div class="side"><h2>View (\(viewRows.count) rows)</h2><table id="view-rows"><tr><th>#</th><th>document</th><th>key</th><th>value</th></tr>
        \(rows(viewRows, viewMarks, side: "view"))</table></div>
        <div class="side"><h2>N1QL (\(n1qlRows.count) rows)</h2><table id="n1ql-rows"><tr><th>#</th><th>document</th><th>key</th><th>value</th></tr>
        \(rows(n1qlRows, n1qlMarks, side: "n1ql"))</table></div>
        </div>
        <h2>Differences</h2><ol id="differences">\(diffItems)</ol>
        <h2>Rules</h2><dl id="rules">\(ruleItems)</dl>
        <script>
        // Counts what the page highlights, so a reader (or a headless browser) sees it at a glance.
        const marked = document.querySelectorAll('tr[data-diffs]:not([data-diffs=""])').length;
        const bad = document.querySelectorAll('tr.unexplained').length;
        document.getElementById('highlighted').textContent = marked + ' highlighted rows, ' + bad + ' unexplained';
        </script>
        </body></html>

        """
    }
}

/// Text put into the reports' HTML (`cbl compare --html`, `cbl migrate-plan --html`).
enum HTMLText {
    /// `s` with `&`, `<`, `>` and `"` escaped: safe in element text and in quoted attributes.
    static func escaped(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
