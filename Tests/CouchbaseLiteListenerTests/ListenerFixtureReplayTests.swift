import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// Replays the 60 request/response pairs captured from a real CouchDB 3.4
/// (`shared/fixtures/couchdb-http/exchanges.json`) against the listener, in order.
///
/// Revision IDs, generated document IDs and `_local` revisions legitimately differ (different
/// hashing; 1.x writes `N-local`), so they are learned from each response and substituted into
/// later requests and expectations. Statuses must match exactly; error bodies must match
/// exactly; success bodies must have every member CouchDB returned with the same values, except
/// members that are opaque by nature (sequences, digests, sizes, server identity).
final class ListenerFixtureReplayTests: ListenerTestCase {
    /// Members whose values are opaque or server-specific.
    let opaqueKeys: Set<String> = [
        "seq", "last_seq", "update_seq", "purge_seq", "committed_update_seq", "digest", "uuid", "uuids",
        "instance_start_time", "version", "git_sha", "features", "vendor", "sizes", "cluster", "props",
        "disk_format_version", "pending", "disk_size", "data_size",
    ]
    /// Members CouchDB returns that 1.x never had.
    let absentInListener: Set<String> = ["git_sha", "features", "cluster", "props", "pending"]
    /// Exchanges whose row order depends on CouchDB's sharding (q=2): compared by shape only.
    let shapeOnly: Set<String> = ["changes style=all_docs include_docs limit", "changes descending"]
    /// Exchanges that need authentication configured; replayed in a second phase.
    let authNotes: Set<String> = ["session info with basic auth", "cookie login",
                                  "request without credentials when the server requires them"]

    var tokens: [String: String] = [:]

    func testReplayCouchDBExchanges() throws {
        guard let fixtures = sharedFixturesDirectory() else { throw XCTSkip("shared/fixtures not found") }
        let file = fixtures.appendingPathComponent("couchdb-http/exchanges.json")
        guard let data = FileManager.default.contents(atPath: file.path) else { throw XCTSkip("exchanges.json not found") }
        let root = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let exchanges = try XCTUnwrap(root["exchanges"] as? [[String: Any]])
        XCTAssertEqual(exchanges.count, 60)

        var replayed = 0
        for exchange in exchanges {
            let note = exchange["note"] as? String ?? ""
            if authNotes.contains(note) { continue }
            try replay(exchange)
            replayed += 1
        }
        // Phase 2: the same server with a password, as the capture's last exchanges had.
        listener.setPasswords(["admin": "<pw>"])
        let auth = ["Authorization": "Basic " + Data("admin:<pw>".utf8).base64EncodedString()]
        for exchange in exchanges where authNotes.contains(exchange["note"] as? String ?? "") {
            let note = exchange["note"] as? String ?? ""
            let ours = try replay(exchange, extraHeaders: note == "session info with basic auth" ? auth : [:])
            if note == "cookie login" {
                XCTAssertTrue(ours.header("set-cookie")?.hasPrefix("AuthSession=") ?? false)
            }
            if note.hasPrefix("request without credentials") {
                XCTAssertEqual(ours.header("www-authenticate"), "Basic realm=\"CouchbaseLite\"")
            }
            replayed += 1
        }
        XCTAssertEqual(replayed, 60)
    }

    @discardableResult
    private func replay(_ exchange: [String: Any], extraHeaders: [String: String] = [:]) throws -> HTTPResult {
        let note = exchange["note"] as? String ?? ""
        let req = try XCTUnwrap(exchange["request"] as? [String: Any])
        let res = try XCTUnwrap(exchange["response"] as? [String: Any])
        let method = try XCTUnwrap(req["method"] as? String)
        let path = substitutePath(try XCTUnwrap(req["path"] as? String))
        var headers = (req["headers"] as? [String: String]) ?? [:]
        headers.merge(extraHeaders) { $1 }
        var body: [UInt8]?
        switch req["body"] {
        case let text as String: body = Array(text.utf8)
        case nil, is NSNull: body = nil
        case let value?: body = Array(try JSONSerialization.data(withJSONObject: substitute(value), options: [.fragmentsAllowed]))
        }
        let ours = try client.send(method, path, headers: headers, body: body)
        let label = "\(note.isEmpty ? "(no note)" : note): \(method) \(path)"
        let expectedStatus = try XCTUnwrap(res["status"] as? Int)
        XCTAssertEqual(ours.status, expectedStatus, "\(label) → \(ours.text)")

        let expectedBody = res["body"]
        if let text = expectedBody as? String {
            XCTAssertEqual(ours.text, text, label)
            if let type = (res["headers"] as? [String: Any])?["Content-Type"] as? String {
                XCTAssertEqual(ours.header("content-type"), type, label)
            }
            return ours
        }
        guard let expected = expectedBody, !(expected is NSNull) else { return ours }
        guard let actual = ours.json else {
            XCTFail("\(label): response is not JSON: \(ours.text)")
            return ours
        }
        learn(expected, actual)
        var problems: [String] = []
        if expectedStatus >= 400 {
            if !jsonEqual(substitute(expected), actual) { problems.append("error body differs") }
        } else {
            compare(expected, actual, key: "", path: "$", shapeOnly: shapeOnly.contains(note), problems: &problems)
        }
        XCTAssertTrue(problems.isEmpty, "\(label): \(problems.joined(separator: "; "))\n expected \(expected)\n got \(ours.text)")
        return ours
    }

    // MARK: Tokens

    private func isRev(_ s: String) -> Bool {
        guard let dash = s.firstIndex(of: "-") else { return false }
        return Int(s[..<dash]) != nil
    }

    /// Learns CouchDB's revision/document IDs → ours from parallel response bodies.
    private func learn(_ expected: Any, _ actual: Any) {
        if let e = expected as? [String: Any], let a = actual as? [String: Any] {
            for key in ["rev", "_rev", "id", "_id"] {
                guard let ev = e[key] as? String, let av = a[key] as? String, ev != av, tokens[ev] == nil else { continue }
                if (key == "id" || key == "_id") && !(ev.count == 32 && ev.allSatisfy(\.isHexDigit)) { continue }
                tokens[ev] = av
                if isRev(ev), isRev(av), let es = ev.split(separator: "-", maxSplits: 1).last,
                   let asfx = av.split(separator: "-", maxSplits: 1).last, es.count == 32 {
                    tokens[String(es)] = String(asfx)
                }
            }
            for (key, value) in e { if let other = a[key] { learn(value, other) } }
        } else if let e = expected as? [Any], let a = actual as? [Any], e.count == a.count {
            // Only rows about the same document teach anything (change rows are ordered differently).
            for (x, y) in zip(e, a) where sameDocument(x, y) { learn(x, y) }
        }
    }

    private func documentID(_ value: Any) -> String? {
        guard let d = value as? [String: Any] else { return nil }
        return d["id"] as? String ?? d["_id"] as? String ?? (d["ok"] as? [String: Any])?["_id"] as? String
    }

    private func sameDocument(_ expected: Any, _ actual: Any) -> Bool {
        guard let e = documentID(expected) else { return documentID(actual) == nil }
        guard let a = documentID(actual) else { return false }
        return (tokens[e] ?? e) == a || (tokens[e] == nil && e.count == 32 && e.allSatisfy(\.isHexDigit))
    }

    private func substitute(_ value: Any) -> Any {
        switch value {
        case let s as String: return tokens[s] ?? s
        case let d as [String: Any]: return d.reduce(into: [String: Any]()) { $0[tokens[$1.key] ?? $1.key] = substitute($1.value) }
        case let a as [Any]: return a.map(substitute)
        default: return value
        }
    }

    /// Long tokens (32-hex revs and IDs) are replaced anywhere in the path; short ones
    /// (`0-1` local revs) only as a whole `rev` parameter.
    private func substitutePath(_ path: String) -> String {
        var out = path
        for (from, to) in tokens.sorted(by: { $0.key.count > $1.key.count }) where from.count >= 10 {
            out = out.replacingOccurrences(of: from, with: to)
        }
        if let range = out.range(of: "rev="), let value = out[range.upperBound...].split(separator: "&").first,
           let mapped = tokens[String(value)] {
            out.replaceSubrange(range.upperBound..<out.index(range.upperBound, offsetBy: value.count), with: mapped)
        }
        return out
    }

    // MARK: Comparison

    private func compare(_ expected: Any, _ actual: Any, key: String, path: String, shapeOnly: Bool, problems: inout [String]) {
        if opaqueKeys.contains(key) { return }
        switch expected {
        case let e as [String: Any]:
            guard let a = actual as? [String: Any] else { problems.append("\(path) is not an object"); return }
            for (k, v) in e where !absentInListener.contains(k) && !(shapeOnly && k == "doc") {
                guard let av = a[k] else { problems.append("\(path).\(k) missing"); continue }
                compare(v, av, key: k, path: "\(path).\(k)", shapeOnly: shapeOnly, problems: &problems)
            }
        case let e as [Any]:
            guard let a = actual as? [Any] else { problems.append("\(path) is not an array"); return }
            guard e.count == a.count else { problems.append("\(path) has \(a.count) elements, expected \(e.count)"); return }
            if key == "results" && !shapeOnly {
                // Change rows: CouchDB's order follows its shards; match rows by document ID.
                for row in e {
                    guard let id = (row as? [String: Any])?["id"] as? String,
                          let match = a.first(where: { ($0 as? [String: Any])?["id"] as? String == tokens[id] ?? id }) else {
                        problems.append("\(path): no row for \(row)")
                        continue
                    }
                    compare(row, match, key: "", path: "\(path)[\(id)]", shapeOnly: false, problems: &problems)
                }
                return
            }
            for (i, (x, y)) in zip(e, a).enumerated() {
                compare(x, y, key: key, path: "\(path)[\(i)]", shapeOnly: shapeOnly, problems: &problems)
            }
        default:
            if shapeOnly { return }
            if !jsonEqual(substitute(expected), actual) {
                problems.append("\(path) = \(actual), expected \(substitute(expected))")
            }
        }
    }
}
