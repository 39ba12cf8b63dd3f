import JSONCore

extension JSONText {
    /// Reads a request body or parameter as a typed `JSONValue` (objects in the client's member
    /// order); malformed or too deeply nested input → 400 `invalid UTF-8 JSON`.
    static func value(_ bytes: [UInt8]) throws -> JSONValue {
        guard !bytes.isEmpty, depthIsAcceptable(bytes) else { throw RESTError.badJSON }
        do {
            return try JSON.value(bytes)
        } catch {
            throw RESTError.badJSON
        }
    }

    /// A JSON object body, typed, or 400.
    static func object(_ bytes: [UInt8], what: String = "Request body") throws -> JSONObject {
        guard case .object(let object) = try value(bytes) else {
            throw RESTError(400, "bad_request", "\(what) must be a JSON object")
        }
        return object
    }
}

extension RESTRouter {
    /// A JSON answer from a typed value, members sorted (as the dictionary-based answers write them).
    static func typedJSON(_ status: Int, _ value: JSONValue) -> RESTResponse {
        encodedJSON(status, (try? JSON.data(value, sortedKeys: true)) ?? JSONText.bytes([String: Any]()))
    }
}
