// JavaScript views over HTTP against CouchDB (`--only js-vs-couchdb`): the same --docs documents
// (100k by default) and the same design document with two JavaScript views, served by our
// listener (what `cbl serve` runs, in this process on 127.0.0.1) and by a real CouchDB named by
// `COUCHDB_URL` (e.g. http://adm:pass@127.0.0.1:5984; skipped when unset); `CBL_URL` puts a
// `cbl serve` started elsewhere in place of ours. A round times a full
// index build of both views: a new design document (a changed map source, so both servers drop
// their index) and the first `_view` query, which waits for the build. The sides alternate
// within each round; the verdict is the median of the rounds' ours/CouchDB ratios, budget 0.2.
// The answers are compared row for row (keys, ids, values, and the grouped reduce).

import CouchbaseLite
import CouchbaseLiteJavaScript
import CouchbaseLiteListener
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JSONCore

/// One server under test: its base URL (no credentials) and `Authorization` header, if any.
private struct ViewServer {
    let name: String
    let base: String
    let authorization: String?

    init(name: String, url: String) throws {
        guard var parts = URLComponents(string: url) else { throw CBLError(400, "not a URL: \(url)") }
        if let user = parts.user {
            let credentials = "\(user):\(parts.password ?? "")"
            authorization = "Basic " + Data(credentials.utf8).base64EncodedString()
        } else {
            authorization = nil
        }
        parts.user = nil
        parts.password = nil
        self.name = name
        self.base = (parts.string ?? url).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
    }

    /// A blocking request; returns the status and the parsed JSON body.
    @discardableResult
    func request(_ method: String, _ path: String, body: Any? = nil, accept: Set<Int> = [200, 201, 202]) throws -> Any {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.timeoutInterval = 600
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(try JSON.data(body, sortedKeys: false))
        }
        final class Box: @unchecked Sendable { var result: Result<(Int, Data), Error>? }
        let box = Box(), done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            if let error { box.result = .failure(error) } else {
                box.result = .success(((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data()))
            }
            done.signal()
        }.resume()
        done.wait()
        let (status, data) = try box.result!.get()
        guard accept.contains(status) else {
            throw CBLError(status, "\(name): \(method) \(path) answered \(status): \(String(decoding: data.prefix(300), as: UTF8.self))")
        }
        return data.isEmpty ? NSNull() : try JSON.parse(Array(data))
    }
}

/// The two views: a map-only index of open tasks by list and date, and a `_count`-reduced
/// index of tags (an array per document, so several rows per document).
private func designDocument(round: Int) -> [String: Any] {
    [
        "language": "javascript",
        "views": [
            "tasks": ["map": "function (doc) { /* round \(round) */ if (doc.type == 'task' && !doc.done) emit([doc.list_id, doc.created_at], doc.title); }"],
            "tags": ["map": "function (doc) { /* round \(round) */ if (doc.tags) for (var i = 0; i < doc.tags.length; i++) emit(doc.tags[i], 1); }",
                     "reduce": "_count"],
        ],
    ]
}

/// The `js` benchmark's todo documents, with their IDs.
private func todoDocument(_ i: Int) -> [String: Any] {
    var doc = todoProperties(i)
    doc["_id"] = String(format: "doc-%06d", i)
    return doc
}

func runCouchDBViewBenchmarks(options: Options, fresh: (String) -> URL) throws -> ([BenchRow], [String]) {
    let docs = options.docs
    let rounds = options.quick ? 1 : 3
    let previous = CBLView.compiler()
    CBLView.setCompiler(CBLJSViewCompiler())
    defer { CBLView.setCompiler(previous) }

    // `CBL_URL` measures a `cbl serve` started elsewhere (another build, to compare two versions).
    let external = ProcessInfo.processInfo.environment["CBL_URL"] ?? ""
    let manager = try CBLManager(directory: fresh("js-couchdb").path)
    let listener = CBLListener(manager: manager, port: 0)
    listener.bindAddress = "127.0.0.1"
    if external.isEmpty { try listener.start() }
    defer { listener.stop(); manager.close() }

    var servers = [try ViewServer(name: "ours", url: external.isEmpty ? "http://127.0.0.1:\(listener.port)" : external)]
    let couchURL = ProcessInfo.processInfo.environment["COUCHDB_URL"] ?? ""
    if !couchURL.isEmpty { servers.append(try ViewServer(name: "CouchDB", url: couchURL)) }
    let db = "/cbl_bench_views"

    // Untimed: the same documents into each server, in pages of 5000.
    for server in servers {
        try server.request("DELETE", db, accept: [200, 202, 404])
        try server.request("PUT", db)
        var start = 0
        while start < docs {
            let page = (start..<min(docs, start + 5000)).map(todoDocument)
            try server.request("POST", db + "/_bulk_docs", body: ["docs": page])
            start += 5000
        }
    }
    defer { for server in servers { _ = try? server.request("DELETE", db, accept: [200, 202, 404]) } }

    /// One full build of both views; returns the time and the answers (map rows, grouped reduce).
    func build(_ server: ViewServer, round: Int) throws -> (Duration, [Any]) {
        let ddoc = db + "/_design/bench"
        var body = designDocument(round: round)
        if let current = try server.request("GET", ddoc, accept: [200, 404]) as? [String: Any], let rev = current["_rev"] {
            body["_rev"] = rev
        }
        try server.request("PUT", ddoc, body: body)
        var answer: Any = NSNull()
        let elapsed = try clock.measure {
            answer = try server.request("GET", ddoc + "/_view/tasks?limit=1")
        }
        let tasks = try server.request("GET", ddoc + "/_view/tasks?skip=\(docs / 3)&limit=20")
        let tags = try server.request("GET", ddoc + "/_view/tags?group=true")
        func rows(_ value: Any) -> Any { (value as? [String: Any])?["rows"] ?? NSNull() }
        let total = (answer as? [String: Any])?["total_rows"] ?? NSNull()
        return (elapsed, [total, rows(tasks), rows(tags)])
    }

    var ours: [Duration] = [], theirs: [Duration] = [], ratios: [Double] = []
    var notes: [String] = []
    for round in 0..<rounds {
        var times: [String: Duration] = [:]
        var answers: [String: [Any]] = [:]
        for server in round % 2 == 0 ? servers : servers.reversed() {
            settleDisk()
            let (time, answer) = try build(server, round: round)
            times[server.name] = time
            answers[server.name] = answer
        }
        ours.append(times["ours"]!)
        if let couch = times["CouchDB"] {
            theirs.append(couch)
            ratios.append(seconds(times["ours"]!) / seconds(couch))
            let same = try JSON.data(answers["ours"]!, sortedKeys: true) == JSON.data(answers["CouchDB"]!, sortedKeys: true)
            guard same else {
                throw CBLError(500, "the view answers differ: ours \(JSONText(answers["ours"]!)) CouchDB \(JSONText(answers["CouchDB"]!))")
            }
        }
        print(String(format: "  js-vs-couchdb round %d: ours %.3fs", round + 1, seconds(times["ours"]!))
              + (times["CouchDB"].map { String(format: ", CouchDB %.3fs (%.3fx)", seconds($0), ratios.last!) } ?? ""))
    }
    guard !theirs.isEmpty else {
        notes.append("js-vs-couchdb: ours " + fmt(seconds(median(ours)), 2) + " s for two JavaScript views over "
                     + "\(docs) documents over HTTP; the CouchDB column is skipped: set COUCHDB_URL")
        return ([], notes)
    }
    notes.append("js-vs-couchdb (base = CouchDB at COUCHDB_URL, same documents and design document, answers equal): "
                 + "ours/CouchDB of each round: " + ratios.map { fmt($0, 3) }.joined(separator: " "))
    return ([BenchRow(name: "2 JS views via HTTP", base: median(theirs), api: median(ours), budget: 0.2,
                      ops: docs, pairedRatio: median(ratios))], notes)
}

/// Compact JSON text of a value, for messages.
private func JSONText(_ value: Any) -> String {
    (try? JSON.string(value, sortedKeys: true)).map { String($0.prefix(400)) } ?? "\(value)"
}
