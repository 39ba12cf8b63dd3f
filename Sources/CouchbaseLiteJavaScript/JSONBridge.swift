import CouchbaseLite
import Foundation
import JSONCore

/// JSON text in and out of the sandboxes, through JSONCore (never JSONSerialization).
enum JSONBridge {
    static func text(_ value: Any) throws -> [UInt8] {
        do { return try JSON.data(value, sortedKeys: false) } catch {
            throw JSFailure.internalError("a value handed to JavaScript is not JSON: \(error)")
        }
    }

    static func parse(_ bytes: [UInt8]) throws -> Any {
        do { return try JSON.parse(bytes) } catch {
            throw JSFailure.internalError("JavaScript answered text that is not JSON: \(error)")
        }
    }
}
