import Foundation

/// JSONP: with `[chttpd] allow_jsonp = true`, a `GET` with `callback=NAME` is answered as
/// `/* CouchDB */NAME(JSON);` with `Content-Type: application/javascript`, as CouchDB answers it
/// (whole or streamed answers alike); a name other than letters, digits and `_$.[]` is `400`.
/// Without the setting the parameter is ignored.
extension RESTRouter {
    func jsonp(_ outcome: RESTOutcome, for request: RESTRequest) -> RESTOutcome {
        guard request.method == "GET", let callback = request.query["callback"],
              state.configuration.settings.allowJSONP,
              case .response(var response) = outcome,
              response.headers.contains(where: { $0.0.lowercased() == "content-type" && $0.1.hasPrefix("application/json") })
        else { return outcome }
        guard Self.isValidCallback(callback) else {
            response.stream?.close()
            return .response(.error(RESTError(400, "bad_request", "invalid_callback")))
        }
        let head = Array("/* CouchDB */\(callback)(".utf8), tail = Array(");".utf8)
        response.headers = response.headers.filter { $0.0.lowercased() != "content-type" && $0.0.lowercased() != "content-length" }
            + [("Content-Type", "application/javascript")]
        if let stream = response.stream {
            let pieces = JSONPPieces(head: head, tail: tail)
            response.stream = RESTBodyStream(length: stream.length.map { $0 + head.count + tail.count },
                                             next: { try pieces.next(stream) }, close: stream.close)
        } else {
            var body = response.body
            while body.last == UInt8(ascii: "\n") { body.removeLast() }
            response.body = head + body + tail
        }
        return .response(response)
    }

    static func isValidCallback(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 256 && name.unicodeScalars.allSatisfy {
            ($0.isASCII && CharacterSet.alphanumerics.contains($0)) || "_$.[]".unicodeScalars.contains($0)
        }
    }
}

/// The head before a streamed answer's first piece, the tail after its last.
// @unchecked because `stage` is only touched by the stream's one reader at a time.
private final class JSONPPieces: @unchecked Sendable {
    private let head: [UInt8]
    private let tail: [UInt8]
    private var stage = 0

    init(head: [UInt8], tail: [UInt8]) {
        self.head = head
        self.tail = tail
    }

    func next(_ inner: RESTBodyStream) throws -> [UInt8]? {
        switch stage {
        case 0:
            guard let first = try inner.next() else {
                stage = 3
                return head + tail
            }
            stage = 1
            return head + first
        case 1:
            if let piece = try inner.next() { return piece }
            stage = 2
            return tail
        default:
            return nil
        }
    }
}
