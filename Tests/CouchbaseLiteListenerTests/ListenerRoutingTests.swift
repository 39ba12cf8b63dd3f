import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// Which answer each shape of path gets (issue 32): the route table's rows, their order, the
/// `405`s with their `Allow`, and the `404`/`400`s for paths no row answers, each checked
/// against the listener's answers from before the table.
final class ListenerRoutingTests: ListenerTestCase {
    /// A request and the answer expected: a status, and for errors CouchDB's `error` and `reason`.
    private struct Case {
        let method: String
        let path: String
        let status: Int
        var error: String?
        var reason: String?
        var body: [UInt8]? = nil
    }

    private func run(_ cases: [Case], file: StaticString = #filePath, line: UInt = #line) throws {
        for c in cases {
            let r = try request(c.method, c.path, body: c.body, headers: c.body == nil ? [:] : ["Content-Type": "application/json"])
            XCTAssertEqual(r.status, c.status, "\(c.method) \(c.path): \(r.text)", file: file, line: line)
            if let error = c.error {
                XCTAssertEqual(r.dict["error"] as? String, error, "\(c.method) \(c.path): \(r.text)", file: file, line: line)
            }
            if let reason = c.reason {
                XCTAssertEqual(r.dict["reason"] as? String, reason, "\(c.method) \(c.path): \(r.text)", file: file, line: line)
            }
            if c.status == 405, let reason = c.reason, reason.hasPrefix("Only ") {
                XCTAssertEqual(r.header("allow"), String(reason.dropFirst(5).dropLast(8)), "\(c.method) \(c.path)", file: file, line: line)
            }
        }
    }

    private static let noDB = "Database does not exist."
    private static func only(_ methods: String) -> String { "Only \(methods) allowed" }

    func testServerPaths() throws {
        try run([
            Case(method: "GET", path: "/", status: 200),
            Case(method: "HEAD", path: "/", status: 200),
            Case(method: "DELETE", path: "/", status: 405, error: "method_not_allowed", reason: Self.only("GET")),
            Case(method: "GET", path: "/_all_dbs", status: 200),
            Case(method: "POST", path: "/_all_dbs", status: 405, error: "method_not_allowed", reason: Self.only("GET")),
            Case(method: "GET", path: "/_all_dbs/x", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/_uuids", status: 200),
            Case(method: "PUT", path: "/_uuids", status: 405, error: "method_not_allowed", reason: Self.only("GET")),
            Case(method: "GET", path: "/_active_tasks", status: 200),
            Case(method: "POST", path: "/_active_tasks", status: 405, error: "method_not_allowed", reason: Self.only("GET")),
            Case(method: "GET", path: "/_session", status: 200),
            Case(method: "PUT", path: "/_session", status: 405, error: "method_not_allowed", reason: Self.only("GET,HEAD,POST,DELETE")),
            Case(method: "GET", path: "/_replicate", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "DELETE", path: "/_up", status: 200),
            Case(method: "GET", path: "/_node/_local/_versions", status: 200),
            Case(method: "GET", path: "/_node/nonode@nohost/_versions", status: 200),
            Case(method: "POST", path: "/_node/_local/_versions", status: 405, error: "method_not_allowed", reason: Self.only("GET")),
            Case(method: "GET", path: "/_node/_local/_other", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/_node", status: 400, error: "illegal_database_name"),
            Case(method: "GET", path: "/_foo", status: 400, error: "illegal_database_name"),
            Case(method: "GET", path: "/_foo/bar", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/_design%2Fx", status: 400, error: "illegal_database_name"),
        ])
    }

    func testDatabasePaths() throws {
        try createDB()
        try run([
            Case(method: "GET", path: "/db", status: 200),
            Case(method: "COPY", path: "/db", status: 405, error: "method_not_allowed", reason: Self.only("GET,HEAD,PUT,POST,DELETE")),
            Case(method: "GET", path: "/nodb", status: 404, error: "not_found", reason: Self.noDB),
            Case(method: "PUT", path: "/Bad", status: 400, error: "illegal_database_name"),
            Case(method: "GET", path: "/db/_all_docs", status: 200),
            Case(method: "HEAD", path: "/db/_all_docs", status: 200),
            Case(method: "DELETE", path: "/db/_all_docs", status: 405, error: "method_not_allowed", reason: Self.only("GET,POST")),
            Case(method: "DELETE", path: "/nodb/_all_docs", status: 404, error: "not_found", reason: Self.noDB),
            Case(method: "GET", path: "/db/_all_docs/x", status: 404, error: "not_found", reason: "missing"),
            Case(method: "POST", path: "/db/_all_docs/x", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/nodb/_all_docs/x", status: 404, error: "not_found", reason: Self.noDB),
            Case(method: "GET", path: "/db/_changes", status: 200),
            Case(method: "PUT", path: "/db/_changes", status: 405, error: "method_not_allowed", reason: Self.only("GET,POST")),
            Case(method: "GET", path: "/db/_bulk_docs", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "GET", path: "/db/_bulk_get", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "GET", path: "/db/_revs_diff", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "GET", path: "/db/_purge", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "GET", path: "/db/_compact", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "GET", path: "/db/_compact/d", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "POST", path: "/db/_compact/d/e", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/db/_temp_view", status: 410, error: "gone"),
            Case(method: "POST", path: "/db/_temp_view/x", status: 410, error: "gone"),
            Case(method: "GET", path: "/nodb/_temp_view", status: 404, error: "not_found", reason: Self.noDB),
            Case(method: "GET", path: "/db/_ensure_full_commit", status: 405, error: "method_not_allowed", reason: Self.only("POST")),
            Case(method: "POST", path: "/db/_ensure_full_commit/x", status: 201),
            Case(method: "GET", path: "/db/_design_docs", status: 200),
            Case(method: "GET", path: "/db/_local_docs", status: 200),
            Case(method: "DELETE", path: "/db/_local_docs", status: 405, error: "method_not_allowed", reason: Self.only("GET,POST")),
            Case(method: "GET", path: "/db/_revs_limit", status: 200),
            Case(method: "HEAD", path: "/db/_revs_limit", status: 200),
            Case(method: "POST", path: "/db/_revs_limit", status: 405, error: "method_not_allowed", reason: Self.only("PUT,GET")),
            // Other `_names`: a reserved ID (400) or nothing (404), the database first.
            Case(method: "GET", path: "/db/_foo", status: 400, error: "illegal_docid"),
            Case(method: "GET", path: "/db/_foo/bar", status: 404, error: "not_found", reason: "missing"),
            Case(method: "PUT", path: "/db/_foo/bar", status: 400, error: "illegal_docid"),
            Case(method: "GET", path: "/nodb/_foo", status: 404, error: "not_found", reason: Self.noDB),
        ])
    }

    func testDocumentPaths() throws {
        try createDB()
        try putDoc("/db/_design/d", ["views": ["v": ["map": "function(doc) { emit(doc._id, null); }"]]])
        try putDoc("/db/doc", ["a": 1])
        try putDoc("/db/_local/l", ["a": 1])
        try run([
            // `_local`: refused before the database is looked at.
            Case(method: "GET", path: "/db/_local", status: 400, error: "bad_request", reason: "Invalid _local document id."),
            Case(method: "GET", path: "/db/_local%2F", status: 400, error: "bad_request", reason: "Invalid _local document id."),
            Case(method: "GET", path: "/db/_local//x", status: 400, error: "bad_request", reason: "Invalid _local document id."),
            Case(method: "GET", path: "/nodb/_local", status: 400, error: "bad_request", reason: "Invalid _local document id."),
            Case(method: "GET", path: "/db/_local/x/y", status: 400, error: "bad_request", reason: "_local documents do not accept attachments."),
            Case(method: "GET", path: "/db/_local%2Fx/y", status: 400, error: "bad_request", reason: "_local documents do not accept attachments."),
            Case(method: "GET", path: "/db/_local/l", status: 200),
            Case(method: "GET", path: "/db/_local%2Fl", status: 200),
            Case(method: "GET", path: "/db/_local/none", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/nodb/_local/l", status: 404, error: "not_found", reason: Self.noDB),
            Case(method: "POST", path: "/db/_local/l", status: 405, error: "method_not_allowed", reason: Self.only("GET,HEAD,PUT,DELETE")),
            // `_design`
            Case(method: "GET", path: "/db/_design", status: 400, error: "illegal_docid"),
            Case(method: "GET", path: "/nodb/_design", status: 400, error: "illegal_docid"),
            Case(method: "GET", path: "/db/_design//x", status: 400, error: "illegal_docid"),
            Case(method: "GET", path: "/db/_design/d", status: 200),
            Case(method: "GET", path: "/db/_design%2Fd", status: 200),
            Case(method: "GET", path: "/db/_design/none", status: 404, error: "not_found"),
            // The view handler (no JavaScript here: its 501 says the view was reached).
            Case(method: "GET", path: "/db/_design/d/_view/v", status: 501, error: "not_implemented"),
            Case(method: "GET", path: "/db/_design%2Fd/_view/v", status: 501, error: "not_implemented"),
            Case(method: "HEAD", path: "/db/_design/d/_view/v", status: 501),
            Case(method: "DELETE", path: "/db/_design/d/_view/v", status: 405, error: "method_not_allowed", reason: Self.only("GET,POST")),
            Case(method: "GET", path: "/db/_design/d/_view", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/db/_design/d/_view/v/w", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/nodb/_design/d/_view/v", status: 404, error: "not_found", reason: Self.noDB),
            Case(method: "GET", path: "/db/_design/d/_info", status: 200),
            Case(method: "POST", path: "/db/_design/d/_info", status: 405, error: "method_not_allowed", reason: Self.only("GET")),
            Case(method: "GET", path: "/db/_design/d/_info/x", status: 501, error: "not_implemented",
                 reason: "Design document handler '_info' is not supported"),
            Case(method: "GET", path: "/db/_design/d/_show/x", status: 501, error: "not_implemented",
                 reason: "Design document handler '_show' is not supported"),
            Case(method: "GET", path: "/db/_design%2Fd/_local%2Fx", status: 501, error: "not_implemented",
                 reason: "Design document handler '_local/x' is not supported"),
            Case(method: "GET", path: "/db/_design/d/att", status: 404, error: "not_found"),
            Case(method: "GET", path: "/db/_design%2Fd/att", status: 404, error: "not_found"),
            // Documents and attachments
            Case(method: "GET", path: "/db/doc", status: 200),
            Case(method: "HEAD", path: "/db/doc", status: 200),
            Case(method: "GET", path: "/db/none", status: 404, error: "not_found", reason: "missing"),
            Case(method: "GET", path: "/nodb/doc", status: 404, error: "not_found", reason: Self.noDB),
            Case(method: "PATCH", path: "/db/doc", status: 405, error: "method_not_allowed", reason: Self.only("DELETE,GET,HEAD,POST,PUT,COPY")),
            Case(method: "PATCH", path: "/db/doc/att", status: 405, error: "method_not_allowed", reason: Self.only("GET,HEAD,PUT,DELETE")),
            // The attachment handler checks the revision before the method.
            Case(method: "PATCH", path: "/db/doc/att?rev=bad", status: 400, error: "bad_request", reason: "Invalid rev format"),
            Case(method: "GET", path: "/db/doc/a/b", status: 404, error: "not_found"),
            Case(method: "GET", path: "/db/%FF", status: 400, error: "illegal_docid", reason: "Document id must be valid UTF-8"),
            Case(method: "GET", path: "/nodb/%FF", status: 400, error: "illegal_docid", reason: "Document id must be valid UTF-8"),
            Case(method: "GET", path: "/db/_design/%FF", status: 400, error: "illegal_docid", reason: "Document id must be valid UTF-8"),
        ])
    }

    /// `--readonly` and passwords are decided before routing, for every path (one place).
    func testAccessIsDecidedBeforeRouting() throws {
        try createDB()
        listener.readOnly = true
        try run([
            Case(method: "PUT", path: "/db/doc", status: 403, error: "forbidden", reason: "The listener is read-only"),
            Case(method: "PATCH", path: "/nodb/_foo", status: 403, error: "forbidden"),
            Case(method: "POST", path: "/db/_all_docs", status: 200, body: Array("{}".utf8)),
            Case(method: "GET", path: "/db/_local", status: 400, error: "bad_request"),
        ])
        listener.readOnly = false
        listener.setPasswords(["admin": "secret"])
        try run([
            Case(method: "GET", path: "/db/_local", status: 401, error: "unauthorized"),
            Case(method: "GET", path: "/_foo", status: 401, error: "unauthorized"),
            // CouchDB: who you are is anyone's question; server endpoints are for server admins.
            Case(method: "GET", path: "/_session", status: 200),
            Case(method: "GET", path: "/_all_dbs", status: 401, error: "unauthorized", reason: "You are not a server admin."),
            Case(method: "GET", path: "/db/%FF%2", status: 400, error: "bad_request"),
        ])
    }
}
