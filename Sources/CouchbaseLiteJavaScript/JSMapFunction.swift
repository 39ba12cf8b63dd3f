import CouchbaseLite
import Foundation
import JSONCore

/// A compiled JavaScript map function. The indexer hands it each document as JSON text and
/// gets the emitted rows back as one JSON text: no Swift dictionary is built per document.
// @unchecked because its fields are lets of thread-safe classes (the sandbox serialises calls under its lock).
final class JSMapFunction: CBLJSONMapFunction, @unchecked Sendable {
    private let sandbox: JSSandbox
    private let failures: FailureCounter

    init(sandbox: JSSandbox, failures: FailureCounter) {
        self.sandbox = sandbox
        self.failures = failures
    }

    func map(json: UnsafeRawBufferPointer) throws -> [UInt8]? {
        do {
            return try sandbox.call(.map, json: json) ?? []
        } catch JSFailure.threw(let message) {
            // CouchDB skips a document its map function throws on, logs it, and goes on.
            failures.increment()
            jsLogger.warning("map function threw on document \(Self.documentID(json)): \(message); the document is skipped")
            return nil
        } catch JSFailure.stopped(let reason) {
            throw CBLDesignFunctionError(.stopped, "the map function was stopped on document \(Self.documentID(json)): \(reason)")
        } catch {
            throw CBLError(500, "the map function failed on document \(Self.documentID(json)): \(error)")
        }
    }

    /// The same function as a 1.x map block (documents as dictionaries; for apps calling the compiler).
    var block: CBLMapBlock {
        { [self] doc, emit in
            guard let json = try? JSON.data(doc, sortedKeys: false),
                  let emitted = try? json.withUnsafeBytes({ try map(json: $0) }) else { return }
            let lines = emitted.split(separator: UInt8(ascii: "\n"))
            var i = 0
            while i + 1 < lines.count {
                if let key = try? JSON.parse(Array(lines[i])), let value = try? JSON.parse(Array(lines[i + 1])) {
                    emit(key, value is NSNull ? nil : value)
                }
                i += 2
            }
        }
    }

    /// The quoted `_id` a document's JSON text starts with (for log lines; "?" if it does not).
    static func documentID(_ json: UnsafeRawBufferPointer) -> String {
        let prefix = Array(#"{"_id":""#.utf8)
        guard json.count > prefix.count, json.starts(with: prefix) else { return "?" }
        var end = prefix.count
        while end < json.count, json[end] != UInt8(ascii: "\"") || json[end - 1] == UInt8(ascii: "\\") { end += 1 }
        return "'" + String(decoding: json[prefix.count..<end], as: UTF8.self) + "'"
    }
}

/// Counts the documents map functions threw on.
// @unchecked because `count` is only touched under `lock`.
final class FailureCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
