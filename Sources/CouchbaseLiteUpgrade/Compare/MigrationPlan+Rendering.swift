import Foundation

extension MigrationPlan {
    /// The plan as JSON: sorted keys, so CI can diff it (timings aside).
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// The one-line summary both renderings start with.
    public var summaryLine: String {
        let views = viewVerdicts.count
        return "\(views) view\(views == 1 ? "" : "s"): \(count(.equal)) equal, \(count(.explained)) equal with explained differences, "
            + "\(count(.handWritten)) need\(count(.handWritten) == 1 ? "s" : "") a hand-written query"
    }

    /// The plan for a terminal: summary first, then one block per view query.
    public func text() -> String {
        var out = "Migration plan for \(database) (\(convertedDocuments) documents converted once, \(milliseconds) ms)\n\(summaryLine)\n"
        for n in notes { out += "note: \(n)\n" }
        for e in entries {
            out += "\n== \(e.view) [\(e.query), \(e.source)]: \(e.verdict.rawValue.uppercased())\n"
            if !e.n1ql.isEmpty {
                out += "N1QL:   \(e.n1ql)\n"
                out += "index:  \(e.indexSwift)\n"
                out += "rows:   view \(e.viewRowCount) in \(e.viewMilliseconds) ms, N1QL \(e.n1qlRowCount) in \(e.n1qlMilliseconds) ms\n"
            }
            for r in e.rules { out += "rule:   \(r.rule) ×\(r.count): \(r.title) (\(r.reference))\n" }
            for u in e.unexpressed { out += "cannot: \(u)\n" }
            if !e.queryBuilderSwift.isEmpty {
                out += "Swift:\n" + e.queryBuilderSwift.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n") + "\n"
            }
        }
        return out
    }

    /// One self-contained HTML page for a team lead: the summary first, then one section per view
    /// query with its N1QL, index, Swift code and differences as tables. No external resources.
    public func html() -> String {
        let esc = HTMLText.escaped
        func cls(_ v: Verdict) -> String { v == .equal ? "equal" : v == .explained ? "explained" : "hand" }
        var summaryRows = ""
        for (i, e) in entries.enumerated() {
            summaryRows += "<tr class=\"\(cls(e.verdict))\"><td><a href=\"#v\(i)\">\(esc(e.view))</a></td><td>\(esc(e.query))</td>"
                + "<td class=verdict>\(esc(e.verdict.rawValue))</td><td class=n>\(e.viewRowCount)</td><td class=n>\(e.n1qlRowCount)</td>"
                + "<td class=n>\(e.viewMilliseconds)</td><td class=n>\(e.n1qlMilliseconds)</td></tr>\n"
        }
        var sections = ""
        for (i, e) in entries.enumerated() {
            sections += "<section id=\"v\(i)\" class=\"\(cls(e.verdict))\"><h2><code>\(esc(e.view))</code> — \(esc(e.query)) "
                + "<span class=\"badge \(cls(e.verdict))\">\(esc(e.verdict.rawValue))</span></h2>\n"
            sections += "<p>Source: \(esc(e.source)). View: \(e.viewRowCount) rows in \(e.viewMilliseconds) ms; N1QL: \(e.n1qlRowCount) rows in \(e.n1qlMilliseconds) ms.</p>\n"
            if !e.unexpressed.isEmpty {
                sections += "<p><b>What the suggestion could not express:</b></p><ul class=cannot>"
                    + e.unexpressed.map { "<li>\(esc($0))</li>" }.joined() + "</ul>\n"
            }
            if !e.n1ql.isEmpty {
                sections += "<h3>N1QL</h3><pre>\(esc(e.n1ql))</pre>\n<h3>Value index</h3><pre>\(esc(e.indexSwift))</pre>\n"
                sections += "<h3>QueryBuilder (Swift)</h3><pre>\(esc(e.queryBuilderSwift))</pre>\n"
            }
            if !e.rules.isEmpty {
                sections += "<h3>Explained by</h3><table><tr><th>rule</th><th>count</th><th>what it says</th><th>reference</th></tr>"
                    + e.rules.map { "<tr><td>\(esc($0.title)) <small>(\(esc($0.rule)))</small></td><td class=n>\($0.count)</td><td>\(esc($0.explanation))</td><td>\(esc($0.reference))</td></tr>" }.joined()
                    + "</table>\n"
            }
            if !e.differences.isEmpty {
                sections += "<h3>Differences (\(e.differences.count) of \(e.differenceCount))</h3><table><tr><th>kind</th><th>view row</th><th>N1QL row</th><th>rule</th><th>detail</th></tr>"
                for d in e.differences {
                    func row(_ r: ComparedRow?) -> String {
                        r.map { "\($0.documentID.map { esc($0) + " " } ?? "")<code>\(esc($0.key.json))</code> → <code>\(esc($0.value.json))</code>" } ?? ""
                    }
                    sections += "<tr class=\"\(d.rule == .unexplained ? "unexplained" : "")\"><td>\(esc(d.kind.rawValue))</td><td>\(row(d.viewRow))</td><td>\(row(d.n1qlRow))</td>"
                        + "<td>\(esc(d.rule.title))</td><td>\(esc(d.detail))</td></tr>"
                }
                sections += "</table>\n"
            }
            sections += "</section>\n"
        }
        return """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>Migration plan: \(esc(database))</title>
        <style>
        body{font:14px system-ui,sans-serif;margin:1.5em;color:#222;max-width:1150px}
        h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em} h3{font-size:1em;margin:.8em 0 .2em}
        pre,code{font:12px ui-monospace,monospace} pre{background:#f5f5f5;padding:.5em;white-space:pre-wrap;word-break:break-word}
        table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
        td.n{text-align:right} .summary{font-size:1.1em;font-weight:bold;padding:.5em .8em;border-radius:4px}
        .badge{font-size:.8em;padding:1px 6px;border-radius:3px} section{border-left:4px solid #ccc;padding-left:1em}
        .equal .verdict,.badge.equal{background:#d8f5d8} .explained .verdict,.badge.explained{background:#fff3c4}
        .hand .verdict,.badge.hand{background:#fde0e0} section.equal{border-color:#5b5} section.explained{border-color:#db3}
        section.hand{border-color:#c33} tr.unexplained{background:#ffc9c9;font-weight:bold}
        .complete{background:#d8f5d8} .incomplete{background:#fde0e0}
        </style></head><body>
        <h1>Migration plan: <code>\(esc(database))</code></h1>
        <p class="summary \(isComplete ? "complete" : "incomplete")" id="summary">\(esc(summaryLine))</p>
        <p>Every suggested N1QL query was run against the view over one conversion of the database (\(convertedDocuments) documents, planned in \(milliseconds) ms).
        “Equal” means the same rows in the same order with the same values; “explained” differences are each named by a rule; the others need a hand-written query.</p>
        \(notes.map { "<p class=note>\(esc($0))</p>" }.joined(separator: "\n"))
        <table id="views"><tr><th>view</th><th>query</th><th>class</th><th>view rows</th><th>N1QL rows</th><th>view ms</th><th>N1QL ms</th></tr>
        \(summaryRows)</table>
        \(sections)
        </body></html>

        """
    }
}
