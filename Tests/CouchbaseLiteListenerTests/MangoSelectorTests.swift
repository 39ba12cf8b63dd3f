@testable import CouchbaseLiteListener
import JSONCore
import XCTest

/// The Mango matcher against CouchDB 3's semantics (mango_selector.erl, mango_json.erl, and the
/// `_find` documentation's operator table), one operator at a time.
final class MangoSelectorTests: XCTestCase {
    /// A document with one field of every JSON kind, nested values and arrays.
    private let doc: JSONValue = try! JSON.value(#"""
    {"_id": "doc1", "name": "Alice", "age": 30, "score": 7.5, "nothing": null, "active": true,
     "tags": ["a", "b", "c"], "numbers": [1, 5, 9], "empty": [],
     "address": {"city": "Paris", "zip": "75001", "geo": {"lat": 48.8}},
     "pets": [{"kind": "cat", "age": 3}, {"kind": "dog", "age": 9}],
     "dotted.name": "yes", "matrix": [[1, 2], [3, 4]]}
    """#)

    private func matches(_ selector: String, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        do {
            return try MangoSelector(JSON.value(selector)).matches(doc)
        } catch {
            XCTFail("selector \(selector) refused: \(error)", file: file, line: line)
            return false
        }
    }

    private func assertMatches(_ selector: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(matches(selector, file: file, line: line), selector, file: file, line: line)
    }

    private func assertNoMatch(_ selector: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(matches(selector, file: file, line: line), selector, file: file, line: line)
    }

    private func assertRefused(_ selector: String, _ error: String, _ reason: String? = nil,
                               file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try MangoSelector(JSON.value(selector))
            XCTFail("\(selector) was accepted", file: file, line: line)
        } catch let e as MangoError {
            XCTAssertEqual(e.error, error, selector, file: file, line: line)
            if let reason { XCTAssertEqual(e.reason, reason, file: file, line: line) }
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }

    func testEmptySelectorMatchesEverything() {
        assertMatches("{}")
    }

    func testImplicitAndExplicitEquality() {
        assertMatches(#"{"name": "Alice"}"#)
        assertMatches(#"{"name": {"$eq": "Alice"}}"#)
        assertNoMatch(#"{"name": "alice"}"#)   // ICU collation is case-sensitive at equality
        assertMatches(#"{"age": 30.0}"#)       // numbers compare by value
        assertMatches(#"{"nothing": null}"#)
        assertMatches(#"{"tags": ["a", "b", "c"]}"#)
        assertNoMatch(#"{"tags": ["a", "b"]}"#)
        assertMatches(#"{"address": {"city": "Paris"}}"#)   // an object of conditions is a nested path
        assertMatches(#"{"address.geo": {"lat": 48.8}}"#)
        assertMatches(#"{"name": "Alice", "age": 30}"#)     // several members: implicit $and
        assertNoMatch(#"{"name": "Alice", "age": 31}"#)
    }

    func testNestedPathsArrayIndexesAndEscapedDots() {
        assertMatches(#"{"address.city": "Paris"}"#)
        assertMatches(#"{"address.geo.lat": {"$gt": 48}}"#)
        assertMatches(#"{"tags.1": "b"}"#)
        assertMatches(#"{"pets.1.kind": "dog"}"#)
        assertNoMatch(#"{"tags.7": {"$exists": false}}"#)   // past the end: bad path, never matches
        assertNoMatch(#"{"name.first": {"$exists": false}}"#)   // through a string: bad path
        assertMatches(#"{"dotted\\.name": "yes"}"#)
        assertNoMatch(#"{"dotted.name": "yes"}"#)
        assertRefused(#"{"a..b": 1}"#, "invalid_field_name", "Invalid field name: a..b")
    }

    func testComparisonsUseCouchDBCollation() {
        assertMatches(#"{"age": {"$gt": 29, "$lt": 31}}"#)
        assertMatches(#"{"age": {"$gte": 30, "$lte": 30}}"#)
        assertNoMatch(#"{"age": {"$gt": 30}}"#)
        assertMatches(#"{"age": {"$ne": 31}}"#)
        assertNoMatch(#"{"age": {"$ne": 30}}"#)
        // null < false < true < numbers < strings < arrays < objects
        assertMatches(#"{"age": {"$gt": true}}"#)
        assertMatches(#"{"age": {"$lt": "0"}}"#)
        assertMatches(#"{"name": {"$lt": []}}"#)
        assertMatches(#"{"tags": {"$lt": {}}}"#)
        assertMatches(#"{"active": {"$gt": false}}"#)
        assertMatches(#"{"nothing": {"$lt": false}}"#)
        // Strings by ICU (lowercase before uppercase), not by bytes.
        assertMatches(#"{"name": {"$gt": "alice"}}"#)
        assertMatches(#"{"name": {"$lt": "bob"}}"#)
        // `_id` compares by bytes: "Z" sorts before "d" there.
        assertMatches(#"{"_id": {"$gt": "Zzz"}}"#)
        assertNoMatch(#"{"_id": {"$lt": "Zzz"}}"#)
        // By collation (any other field) "doc1" sorts before "Zzz".
        assertMatches(#"{"pets.0.kind": {"$lt": "Zzz"}}"#)
    }

    func testMissingFieldsAndNull() {
        // A missing field matches nothing but `$exists: false`, not even `$ne`.
        assertNoMatch(#"{"missing": {"$ne": 1}}"#)
        assertNoMatch(#"{"missing": null}"#)
        assertMatches(#"{"missing": {"$exists": false}}"#)
        assertNoMatch(#"{"missing": {"$exists": true}}"#)
        assertMatches(#"{"nothing": {"$exists": true}}"#)   // null is a value
        assertNoMatch(#"{"nothing": {"$exists": false}}"#)
    }

    func testInAndNin() {
        assertMatches(#"{"name": {"$in": ["Bob", "Alice"]}}"#)
        assertNoMatch(#"{"name": {"$in": []}}"#)
        assertMatches(#"{"tags": {"$in": ["z", "c"]}}"#)     // an array matches through its elements
        assertNoMatch(#"{"tags": {"$in": ["z"]}}"#)
        assertMatches(#"{"name": {"$nin": ["Bob"]}}"#)
        assertNoMatch(#"{"name": {"$nin": ["Alice"]}}"#)
        assertNoMatch(#"{"tags": {"$nin": ["c"]}}"#)
        assertMatches(#"{"name": {"$nin": []}}"#)
        assertNoMatch(#"{"missing": {"$nin": [1]}}"#)
        assertRefused(#"{"name": {"$in": "Alice"}}"#, "bad_arg", #"Bad argument for operator $in: "Alice""#)
        assertRefused(#"{"name": {"$nin": 3}}"#, "bad_arg")
    }

    func testExists() {
        assertMatches(#"{"address.zip": {"$exists": true}}"#)
        assertRefused(#"{"name": {"$exists": 1}}"#, "bad_arg")
    }

    func testType() {
        assertMatches(#"{"nothing": {"$type": "null"}}"#)
        assertMatches(#"{"active": {"$type": "boolean"}}"#)
        assertMatches(#"{"age": {"$type": "number"}}"#)
        assertMatches(#"{"score": {"$type": "number"}}"#)
        assertMatches(#"{"name": {"$type": "string"}}"#)
        assertMatches(#"{"tags": {"$type": "array"}}"#)
        assertMatches(#"{"address": {"$type": "object"}}"#)
        assertNoMatch(#"{"age": {"$type": "string"}}"#)
        assertNoMatch(#"{"missing": {"$type": "null"}}"#)
        assertRefused(#"{"age": {"$type": 1}}"#, "bad_arg")
    }

    func testRegexOnStringsOnly() {
        assertMatches(#"{"name": {"$regex": "^Al"}}"#)
        assertMatches(#"{"name": {"$regex": "lic"}}"#)       // unanchored, as PCRE's re:run
        assertNoMatch(#"{"name": {"$regex": "^al"}}"#)
        assertMatches(#"{"name": {"$regex": "(?i)^al"}}"#)
        assertNoMatch(#"{"age": {"$regex": "3"}}"#)          // numbers never match
        assertNoMatch(#"{"tags": {"$regex": "a"}}"#)         // nor arrays
        assertRefused(#"{"name": {"$regex": "(unclosed"}}"#, "bad_arg")
        assertRefused(#"{"name": {"$regex": 5}}"#, "bad_arg")
    }

    func testSize() {
        assertMatches(#"{"tags": {"$size": 3}}"#)
        assertMatches(#"{"empty": {"$size": 0}}"#)
        assertNoMatch(#"{"tags": {"$size": 2}}"#)
        assertNoMatch(#"{"name": {"$size": 5}}"#)            // arrays only
        assertRefused(#"{"tags": {"$size": -1}}"#, "bad_arg")
        assertRefused(#"{"tags": {"$size": 1.5}}"#, "bad_arg")
    }

    func testAll() {
        assertMatches(#"{"tags": {"$all": ["c", "a"]}}"#)
        assertNoMatch(#"{"tags": {"$all": ["a", "z"]}}"#)
        assertNoMatch(#"{"tags": {"$all": []}}"#)
        assertNoMatch(#"{"name": {"$all": ["Alice"]}}"#)     // arrays only
        assertMatches(#"{"matrix": {"$all": [[1, 2]]}}"#)     // an element that is an array
        assertMatches(#"{"numbers": {"$all": [[1, 5, 9]]}}"#) // or the array itself
        assertRefused(#"{"tags": {"$all": "a"}}"#, "bad_arg")
    }

    func testElemMatchAndAllMatch() {
        assertMatches(#"{"pets": {"$elemMatch": {"kind": "dog", "age": {"$gt": 5}}}}"#)
        assertNoMatch(#"{"pets": {"$elemMatch": {"kind": "cat", "age": {"$gt": 5}}}}"#)
        assertMatches(#"{"numbers": {"$elemMatch": {"$gte": 8, "$lt": 10}}}"#)
        assertNoMatch(#"{"numbers": {"$elemMatch": {"$gt": 9}}}"#)
        assertNoMatch(#"{"name": {"$elemMatch": {"$eq": "Alice"}}}"#)
        assertMatches(#"{"numbers": {"$allMatch": {"$gt": 0}}}"#)
        assertNoMatch(#"{"numbers": {"$allMatch": {"$gt": 1}}}"#)
        assertNoMatch(#"{"empty": {"$allMatch": {"$gt": 1}}}"#)   // never on an empty array
        assertRefused(#"{"pets": {"$elemMatch": []}}"#, "bad_arg")
    }

    func testAndOrNotNor() {
        assertMatches(#"{"$and": [{"name": "Alice"}, {"age": 30}]}"#)
        assertNoMatch(#"{"$and": [{"name": "Alice"}, {"age": 31}]}"#)
        assertMatches(#"{"$and": []}"#)
        assertMatches(#"{"$or": [{"name": "Bob"}, {"age": 30}]}"#)
        assertNoMatch(#"{"$or": [{"name": "Bob"}, {"age": 31}]}"#)
        assertMatches(#"{"$or": []}"#)
        assertMatches(#"{"age": {"$or": [29, 30]}}"#)          // under a field, bare values are $eq
        assertMatches(#"{"$not": {"name": "Bob"}}"#)
        assertNoMatch(#"{"$not": {"name": "Alice"}}"#)
        assertMatches(#"{"age": {"$not": {"$gt": 40}}}"#)
        assertMatches(#"{"$nor": [{"name": "Bob"}, {"age": 31}]}"#)
        assertNoMatch(#"{"$nor": [{"name": "Bob"}, {"age": 30}]}"#)
        // Negations are pushed to the fields, so a missing field does not satisfy them...
        assertNoMatch(#"{"$not": {"missing": {"$gt": 1}}}"#)
        assertNoMatch(#"{"$nor": [{"missing": 1}]}"#)
        // ...except `$exists`, which flips.
        assertMatches(#"{"$not": {"missing": {"$exists": true}}}"#)
        // A `$not` that cannot be flipped stays a negation of the field's condition.
        assertMatches(#"{"name": {"$not": {"$regex": "^B"}}}"#)
        assertNoMatch(#"{"missing": {"$not": {"$regex": "^B"}}}"#)
        assertRefused(#"{"$and": {"name": "Alice"}}"#, "bad_arg")
        assertRefused(#"{"$not": ["name"]}"#, "bad_arg")
    }

    func testModAndBeginsWith() {
        assertMatches(#"{"age": {"$mod": [7, 2]}}"#)
        assertNoMatch(#"{"score": {"$mod": [2, 1]}}"#)       // integers only
        assertMatches(#"{"name": {"$beginsWith": "Al"}}"#)
        assertNoMatch(#"{"age": {"$beginsWith": "3"}}"#)
    }

    func testMalformedSelectors() {
        assertRefused(#"["name"]"#, "invalid_selector_json")
        assertRefused(#"{"name": {"$foo": 1}}"#, "invalid_operator", "Invalid operator: $foo")
        assertRefused(#"{"$where": "x"}"#, "not_supported", "Unsupported operator: $where")
        assertRefused(#"{"$gt": 1}"#, "invalid_selector", "One or more conditions is missing a field name.")
    }

    /// Objects compare member by member in the order they list them (CouchDB's ejson collation):
    /// `{"b":1,"a":1}` sorts after `{"b":1}` and before `{"b":2}`.
    func testCollationOrder() {
        let ordered: [JSONValue] = [.null, false, true, -1, 0, 2.5, 10, "", "a", "A", "b", "B", [], [1],
                                    [1, 2], [2], [:], ["a": 1], ["b": 1], ["b": 1, "a": 1], ["b": 2]]
        for i in ordered.indices {
            for j in ordered.indices {
                let expected = i == j ? 0 : (i < j ? -1 : 1)
                XCTAssertEqual(MangoCollation.compare(ordered[i], ordered[j]), expected, "\(ordered[i]) vs \(ordered[j])")
            }
        }
    }
}
