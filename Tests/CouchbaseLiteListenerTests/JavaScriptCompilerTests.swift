import CouchbaseLite
import CouchbaseLiteJavaScript
import Foundation
import JSONCore
import XCTest

/// The JavaScript compilers on their own: CouchDB's query-server globals, CommonJS `require`,
/// compile errors, and the time and memory limits.
final class JavaScriptCompilerTests: XCTestCase {
    private func map(_ compiled: CBLCompiledMap, _ doc: String) throws -> String? {
        let function = try XCTUnwrap(compiled.json)
        return try Array(doc.utf8).withUnsafeBytes { try function.map(json: $0) }.map { String(decoding: $0, as: UTF8.self) }
    }

    func testQueryServerGlobalsAndRequire() throws {
        let compiler = CBLJSViewCompiler()
        let library: [String: Any] = [
            "util": "exports.twice = function (x) { return x * 2; }; exports.name = module.id;",
            "nested": ["b": "var u = require('../util'); exports.four = u.twice(2);"],
        ]
        let compiled = try compiler.compileDesignDocumentMap("""
            function(doc) {
              var b = require('views/lib/nested/b');
              log('mapping ' + doc._id);
              emit(isArray(doc.tags), [sum(doc.nums), toJSON({a: 1}), b.four, require('views/lib/util').name]);
              emit(doc.missing);
            }
            """, language: "javascript", library: library)
        XCTAssertEqual(try map(compiled, #"{"_id":"d1","_rev":"1-a","tags":["x"],"nums":[1,2,3]}"#),
                       "true\n" + #"[6,"{\"a\":1}",4,"views/lib/util"]"# + "\nnull\nnull\n")
        // A module that does not exist makes the map throw for that document only.
        let missing = try compiler.compileDesignDocumentMap("function(doc) { require('views/lib/nope'); }",
                                                            language: "javascript", library: library)
        let before = compiler.mapFailureCount
        XCTAssertNil(try map(missing, #"{"_id":"d2","_rev":"1-a"}"#))
        XCTAssertEqual(compiler.mapFailureCount - before, 1)
        // No file, process or network API exists in the sandbox.
        let probe = try compiler.compileDesignDocumentMap("""
            function(doc) { emit([typeof require, typeof process, typeof XMLHttpRequest, typeof fetch, typeof load, typeof readFile], null); }
            """, language: "javascript", library: [:])
        XCTAssertEqual(try map(probe, #"{"_id":"d3","_rev":"1-a"}"#),
                       #"["function","undefined","undefined","undefined","undefined","undefined"]"# + "\nnull\n")
    }

    func testCompileErrorsAreClear() throws {
        let compiler = CBLJSViewCompiler()
        XCTAssertThrowsError(try compiler.compileDesignDocumentMap("function(doc) { emit(", language: "javascript", library: [:])) { error in
            // Typed, so the listener answers CouchDB's `compilation_error` (400).
            XCTAssertEqual((error as? CBLDesignFunctionError)?.kind, .compilation)
            XCTAssertEqual((error as? CBLDesignFunctionError)?.code, 400)
            XCTAssertTrue((error as? CBLDesignFunctionError)?.message.hasPrefix("Compilation of the map function failed: Compilation failed: SyntaxError") == true, "\(error)")
        }
        XCTAssertThrowsError(try compiler.compileDesignDocumentMap("42", language: "javascript", library: [:])) { error in
            XCTAssertTrue("\(error)".contains("Expression does not eval to a function. (42)"), "\(error)")
        }
        XCTAssertThrowsError(try compiler.compileDesignDocumentMap("(lambda (doc))", language: "scheme", library: [:])) { error in
            XCTAssertEqual((error as? CBLError)?.code, 501)
        }
        // A trailing semicolon, as many design documents have, is fine.
        XCTAssertNoThrow(try compiler.compileDesignDocumentMap("function(doc) { emit(doc._id, 1); };\n", language: "javascript", library: [:]))
    }

    func testARunawayCallIsStoppedAndTheFunctionKeepsWorking() throws {
        let compiler = CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 0.5))
        let compiled = try compiler.compileDesignDocumentMap(
            "function(doc) { if (doc.loop) { while (true) {} } emit(doc._id, null); }", language: "javascript", library: [:])
        let start = Date()
        XCTAssertThrowsError(try map(compiled, #"{"_id":"spin","_rev":"1-a","loop":true}"#)) { error in
            XCTAssertTrue("\(error)".contains("document 'spin': the function ran longer than its time limit (0.5 s)"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 3)
        XCTAssertEqual(try map(compiled, #"{"_id":"calm","_rev":"1-a"}"#), "\"calm\"\nnull\n")
    }

    func testAMemoryHungryCallIsStopped() throws {
        let compiler = CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 30, memoryLimit: 64 << 20))
        let compiled = try compiler.compileDesignDocumentMap(
            "function(doc) { var a = []; while (true) a.push(new Array(10000).join('x') + a.length); }",
            language: "javascript", library: [:])
        let start = Date()
        XCTAssertThrowsError(try map(compiled, #"{"_id":"hog","_rev":"1-a"}"#)) { error in
            XCTAssertTrue("\(error)".contains("the function used more memory than its limit (64 MiB)"), "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 20)
    }

    func testReduceFailuresFailTheQuery() throws {
        let manager = try CBLManager(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("cbl-js-\(UUID().uuidString)").path)
        defer { manager.close() }
        let db = try manager.databaseNamed("db")
        for i in 0..<3 { try db.document(withID: "d\(i)")!.putProperties(["n": i]) }
        let compiler = CBLJSViewCompiler(limits: CBLJSLimits(timeLimit: 0.5))
        let view = db.viewNamed("v")
        view.setMapBlock(compiler.compileMapFunction("function(doc) { emit(doc.n, doc.n); }", language: "javascript")!,
                         reduce: compiler.compileReduceFunction("function(keys, values, rereduce) { throw new Error('nope'); }",
                                                                language: "javascript"),
                         version: "1")
        XCTAssertThrowsError(try view.createQuery().run()) { error in
            XCTAssertEqual((error as? CBLError)?.code, 500)
            XCTAssertTrue("\(error)".contains("The reduce function failed: Error: nope"), "\(error)")
        }
        let mapOnly = view.createQuery()
        mapOnly.mapOnly = true
        XCTAssertEqual(try mapOnly.run().count, 3)
    }

    func testRereduceOverMoreRowsThanOneReduceCall() throws {
        let manager = try CBLManager(directory: FileManager.default.temporaryDirectory
            .appendingPathComponent("cbl-js-\(UUID().uuidString)").path)
        defer { manager.close() }
        let db = try manager.databaseNamed("db")
        CBLView.setCompiler(CBLJSViewCompiler())
        defer { CBLView.setCompiler(nil) }
        XCTAssertTrue(db.inTransaction {
            for i in 0..<10_001 { _ = try? db.document(withID: "d\(i)")!.putProperties(["g": i % 2]) }
            return true
        })
        try db.document(withID: "_design/big")!.putProperties(["views": ["byG": [
            "map": "function(doc) { emit(doc.g, 1); }",
            "reduce": "function(keys, values, rereduce) { return rereduce ? {n: sum(values.map(function (v) { return v.n; })), re: true} : {n: values.length, re: false}; }",
        ]]])
        let view = try XCTUnwrap(db.compileDesignDocumentView(named: "big/byG"))
        let total = try XCTUnwrap(Array(try view.createQuery().run()).first?.value as? [String: Any])
        XCTAssertEqual(total["n"] as? Int, 10_001)
        XCTAssertEqual(total["re"] as? Bool, true)   // more rows than one reduce call takes: re-reduced
        let grouped = view.createQuery()
        grouped.groupLevel = 1
        let groups = Array(try grouped.run()).map { (($0.key as? Int) ?? -1, ($0.value as? [String: Any])?["n"] as? Int ?? -1) }
        XCTAssertEqual(groups.map(\.0), [0, 1])
        XCTAssertEqual(groups.map(\.1), [5_001, 5_000])
    }

    func testValidationOutcomes() throws {
        let compiler = CBLJSFilterCompiler()
        let validate = try XCTUnwrap(try compiler.compileValidateDocUpdate("""
            function(newDoc, oldDoc, userCtx, secObj) {
              if (newDoc.kind == 'bad') throw({forbidden: 'bad kind'});
              if (newDoc.kind == 'who') throw({unauthorized: 'log in'});
              if (newDoc.kind == 'oops') throw new Error('broken validator');
              if (oldDoc && oldDoc.kind != newDoc.kind) throw({forbidden: 'kind is fixed: ' + oldDoc.kind});
            }
            """, language: "javascript", designDocument: [:]))
        let ctx: [String: Any] = ["db": "db", "name": NSNull(), "roles": ["_admin"]]
        XCTAssertNoThrow(try validate(["_id": "a", "kind": "good"], nil, ctx, [:]))
        for (kind, old, code, message) in [("bad", nil, 403, "bad kind"), ("who", nil, 401, "log in"),
                                           ("other", "good", 403, "kind is fixed: good")] as [(String, String?, Int, String)] {
            XCTAssertThrowsError(try validate(["_id": "a", "kind": kind], old.map { ["_id": "a", "kind": $0] }, ctx, [:])) { error in
                XCTAssertEqual(error as? CBLError, CBLError(code, message))
            }
        }
        XCTAssertThrowsError(try validate(["_id": "a", "kind": "oops"], nil, ctx, [:])) { error in
            XCTAssertEqual((error as? CBLError)?.code, 500)
            XCTAssertTrue("\(error)".contains("Error: broken validator"), "\(error)")
        }
    }
}
