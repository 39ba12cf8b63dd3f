/// The order in which a JSON text lists the members of its objects, where that order is not the
/// sorted one: CouchDB keeps a document's members as they were written, and its view collation
/// compares object keys member by member in that order (`{"b":2,"a":1}` sorts after `{"b":2}`).
///
/// A `[String: Any]` has no order, so a body written from one is sorted (1.x's canonical JSON).
/// A writer that has the original text's member order writes the same members in that order
/// instead (``JSONWriter/writeObject(_:order:skippingKey:)``). Only the parts of the text that
/// differ from sorted order are kept: a text whose every object is sorted has no member order.
package indirect enum JSONMemberOrder: Sendable, Equatable {
    /// An object's member names in text order, each with the order inside its value (nil when
    /// that value, and everything in it, is in sorted order or not a container).
    case object([Member])
    /// An array's elements' orders (nil entries as above).
    case array([JSONMemberOrder?])

    package struct Member: Sendable, Equatable {
        package var name: String
        package var order: JSONMemberOrder?
        package init(name: String, order: JSONMemberOrder?) {
            self.name = name
            self.order = order
        }
    }

    /// The member order of `text` (valid JSON), or nil when every object in it lists its members
    /// in sorted (UTF-16) order, or the text cannot be read.
    package static func unsorted(in text: [UInt8]) -> JSONMemberOrder? {
        read(text, keepingSorted: false)
    }

    /// The member order of every object and array in `text` (valid JSON), sorted or not; nil for
    /// a scalar or a text that cannot be read.
    package static func complete(in text: [UInt8]) -> JSONMemberOrder? {
        read(text, keepingSorted: true)
    }

    /// An object's member names in text order (empty for an array).
    package var memberNames: [String] {
        guard case .object(let members) = self else { return [] }
        return members.map(\.name)
    }

    private static func read(_ text: [UInt8], keepingSorted: Bool) -> JSONMemberOrder? {
        text.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var scanner = Scanner(p: base, end: buffer.count, keepingSorted: keepingSorted)
            // nil: unreadable; .some(nil): a scalar, or containers in sorted order throughout.
            guard let order = try? scanner.value() else { return nil }
            return order
        }
    }

    /// The order of the value under `name` (for an object's member).
    package func member(_ name: String) -> JSONMemberOrder? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.order
    }

    /// The order of the element at `index` (for an array).
    package func element(_ index: Int) -> JSONMemberOrder? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    private struct Malformed: Error {}

    /// A reader over JSON text that keeps only the structure of its containers.
    private struct Scanner {
        let p: UnsafePointer<UInt8>
        let end: Int
        /// Keeps containers in sorted order too (``complete(in:)``).
        let keepingSorted: Bool
        var pos = 0

        mutating func skipWhitespace() {
            pos = JSONLexer.skipWhitespace(p, from: pos, end: end)
        }

        /// Reads one value. Returns nil for a scalar, `.some(nil)` for a container in sorted
        /// order throughout, `.some(order)` otherwise.
        mutating func value() throws -> JSONMemberOrder?? {
            skipWhitespace()
            guard pos < end else { throw Malformed() }
            switch p[pos] {
            case UInt8(ascii: "{"): return .some(try object())
            case UInt8(ascii: "["): return .some(try array())
            case UInt8(ascii: "\""): _ = try stringToken(); return nil
            default:
                while pos < end, !",]} \n\r\t".utf8.contains(p[pos]) { pos += 1 }
                return nil
            }
        }

        mutating func object() throws -> JSONMemberOrder? {
            pos += 1
            // Names stay byte ranges of the text until the object turns out to be kept: a sorted
            // object (what 1.x and replicated bodies hold) costs no string.
            var names: [Token] = []
            var orders: [JSONMemberOrder?] = []
            var sorted = true
            var nested = false
            skipWhitespace()
            if pos < end, p[pos] == UInt8(ascii: "}") { pos += 1; return keepingSorted ? .object([]) : nil }
            while true {
                skipWhitespace()
                guard pos < end, p[pos] == UInt8(ascii: "\"") else { throw Malformed() }
                let name = try stringToken()
                if sorted, let last = names.last, !(try precedes(last, name)) { sorted = false }
                skipWhitespace()
                guard pos < end, p[pos] == UInt8(ascii: ":") else { throw Malformed() }
                pos += 1
                let order = try value() ?? nil
                if order != nil { nested = true }
                names.append(name)
                orders.append(order)
                skipWhitespace()
                guard pos < end else { throw Malformed() }
                if p[pos] == UInt8(ascii: ",") { pos += 1; continue }
                guard p[pos] == UInt8(ascii: "}") else { throw Malformed() }
                pos += 1
                if sorted && !nested && !keepingSorted { return nil }
                return .object(try zip(names, orders).map { Member(name: try text(of: $0), order: $1) })
            }
        }

        mutating func array() throws -> JSONMemberOrder? {
            pos += 1
            var elements: [JSONMemberOrder?] = []
            var nested = false
            skipWhitespace()
            if pos < end, p[pos] == UInt8(ascii: "]") { pos += 1; return keepingSorted ? .array([]) : nil }
            while true {
                let order = try value() ?? nil
                if order != nil { nested = true }
                elements.append(order)
                skipWhitespace()
                guard pos < end else { throw Malformed() }
                if p[pos] == UInt8(ascii: ",") { pos += 1; continue }
                guard p[pos] == UInt8(ascii: "]") else { throw Malformed() }
                pos += 1
                return nested || keepingSorted ? .array(elements) : nil
            }
        }

        /// A string token: its bytes between the quotes, and whether it has escapes.
        struct Token {
            var start: Int
            var end: Int
            var escaped: Bool
        }

        /// Reads a string token (at its opening quote).
        mutating func stringToken() throws -> Token {
            let start = pos + 1
            pos += 1
            var escaped = false
            while pos < end {
                let c = p[pos]
                if c == UInt8(ascii: "\\") {
                    escaped = true
                    pos += 2
                    continue
                }
                pos += 1
                if c == UInt8(ascii: "\"") { return Token(start: start, end: pos - 1, escaped: escaped) }
            }
            throw Malformed()
        }

        /// The decoded text of a token.
        func text(of token: Token) throws -> String {
            let raw = UnsafeBufferPointer(start: p + token.start, count: token.end - token.start)
            if !token.escaped { return String(decoding: raw, as: UTF8.self) }
            let quoted = UnsafeRawBufferPointer(start: p + token.start - 1, count: token.end - token.start + 2)
            guard let decoded = try? JSON.parse(quoted) as? String else { throw Malformed() }
            return decoded
        }

        /// Whether `a` sorts strictly before `b` (UTF-16 order), comparing the bytes in place when
        /// neither has escapes.
        func precedes(_ a: Token, _ b: Token) throws -> Bool {
            if a.escaped || b.escaped { return JSON.utf16Precedes(try text(of: a), try text(of: b)) }
            return utf16Less(UnsafeBufferPointer(start: p + a.start, count: a.end - a.start),
                             UnsafeBufferPointer(start: p + b.start, count: b.end - b.start))
        }
    }
}

extension JSONMemberOrder {
    /// The member order of a typed value, where it is not the sorted one (as ``unsorted(in:)``
    /// finds it in text): a dictionary-based writer given it writes the value's members in its order.
    package init?(unsortedIn value: JSONValue) {
        switch value {
        case .object(let object):
            var members: [Member] = []
            members.reserveCapacity(object.count)
            var anyInner = false
            for (key, inner) in object {
                let order = JSONMemberOrder(unsortedIn: inner)
                if order != nil { anyInner = true }
                members.append(Member(name: key, order: order))
            }
            guard anyInner || !object.isSorted else { return nil }
            self = .object(members)
        case .array(let items):
            let orders = items.map { JSONMemberOrder(unsortedIn: $0) }
            guard orders.contains(where: { $0 != nil }) else { return nil }
            self = .array(orders)
        default:
            return nil
        }
    }
}

extension JSONValue {
    /// The value with its objects' members in the order `order` gives, members it does not list
    /// (and every object it gives no order for) in sorted order: what
    /// ``JSONWriter/writeObject(_:order:skippingKey:)`` writes, as a value a writer given
    /// `sortedKeys: false` writes the same way.
    package func ordered(by order: JSONMemberOrder?) -> JSONValue {
        switch (self, order) {
        case (.object(let object), .object(let members)?):
            var out = JSONObject(minimumCapacity: object.count)
            for member in members where out[member.name] == nil {
                if let value = object[member.name] { out[member.name] = value.ordered(by: member.order) }
            }
            for (key, value) in object.sortedMembers where out[key] == nil { out[key] = value.ordered(by: nil) }
            return .object(out)
        case (.object(let object), _):
            var out = JSONObject(minimumCapacity: object.count)
            for (key, value) in object.sortedMembers { out[key] = value.ordered(by: nil) }
            return .object(out)
        case (.array(let items), .array(let orders)?):
            return .array(items.enumerated().map { $0.element.ordered(by: $0.offset < orders.count ? orders[$0.offset] : nil) })
        case (.array(let items), _):
            return .array(items.map { $0.ordered(by: nil) })
        default:
            return self
        }
    }
}
