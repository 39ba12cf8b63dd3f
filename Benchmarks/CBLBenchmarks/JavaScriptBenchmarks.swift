// JavaScript view benchmark (`--only js`): a full index of a design document's JavaScript map
// (CBLJSViewCompiler on JavaScriptCore) over --docs documents, against the same map written as
// a Swift closure, in paired rounds of the same run.

import CouchbaseLite
import CouchbaseLiteJavaScript
import Foundation
import JSONCore

/// A PhoneGap-era todo app's documents: lists and tasks with ISO 8601 timestamps.
func todoProperties(_ i: Int) -> [String: Any] {
    let day = 1 + i % 28, minute = i % 60
    return [
        "type": i % 4 == 0 ? "list" : "task",
        "title": "Item \(i)",
        "created_at": String(format: "2013-05-%02dT10:%02d:00Z", day, minute),
        "list_id": "list-\(i / 100)",
        "done": i % 3 == 0,
        "tags": ["home", "t\(i % 7)"],
    ]
}

func runJavaScriptBenchmarks(options: Options, fresh: (String) -> URL) throws -> ([BenchRow], [String]) {
    let docs = options.docs
    let rounds = options.quick ? 1 : 5
    let previous = CBLView.compiler()
    CBLView.setCompiler(CBLJSViewCompiler())
    defer { CBLView.setCompiler(previous) }

    let manager = try CBLManager(directory: fresh("js").path)
    defer { manager.close() }
    let db = try manager.databaseNamed("todo")
    let ids = (0..<docs).map { String(format: "doc-%06d", $0) }
    _ = try timedPutProperties(db, ids: ids, properties: (0..<docs).map(todoProperties))
    let mapSource = "function(doc){ if (doc.type == 'task') emit([doc.type, doc.created_at], null); }"
    _ = try db.document(withID: "_design/todo")!.putProperties([
        "language": "javascript", "views": ["tasks": ["map": mapSource]],
    ])
    guard let jsView = try db.compileDesignDocumentView(named: "todo/tasks") else {
        throw CBLError(500, "the design document view did not compile")
    }
    let swiftView = db.viewNamed("swift_tasks")
    swiftView.setMapBlock({ doc, emit in
        if doc["type"] as? String == "task" { emit([doc["type"]!, doc["created_at"] ?? NSNull()] as [Any], nil) }
    }, version: "1")

    func timeFullIndex(_ view: CBLView) throws -> Duration {
        view.deleteIndex()
        settleDisk()
        let elapsed = try clock.measure { try view.updateIndex() }
        let expected = UInt(docs - (docs + 3) / 4)
        guard view.totalRows == expected else {
            throw CBLError(500, "\(view.name) indexed \(view.totalRows) rows, expected \(expected)")
        }
        return elapsed
    }

    // Warm-up: JSC's JIT tiers up during the first pass.
    _ = try timeFullIndex(jsView)
    _ = try timeFullIndex(swiftView)
    var jsTimes: [Duration] = [], swiftTimes: [Duration] = [], ratios: [Double] = []
    for round in 0..<rounds {
        let js: Duration, swift: Duration
        if round % 2 == 0 {
            swift = try timeFullIndex(swiftView)
            js = try timeFullIndex(jsView)
        } else {
            js = try timeFullIndex(jsView)
            swift = try timeFullIndex(swiftView)
        }
        jsTimes.append(js)
        swiftTimes.append(swift)
        ratios.append(seconds(js) / seconds(swift))
    }
    let ratio = median(ratios)
    let jsRate = Double(docs) / seconds(median(jsTimes)), swiftRate = Double(docs) / seconds(median(swiftTimes))
    let rows = [BenchRow(name: "JS view full index", base: median(swiftTimes), api: median(jsTimes),
                         budget: 3.0, ops: docs, pairedRatio: ratio)]
    let notes = [
        "JS view full index (base = the same map as a Swift closure): " + fmt(jsRate, 0) + " docs/s in JavaScript, "
            + fmt(swiftRate, 0) + " docs/s in Swift; JS/Swift of each round: " + ratios.map { fmt($0, 2) }.joined(separator: " "),
    ]
    return (rows, notes)
}
