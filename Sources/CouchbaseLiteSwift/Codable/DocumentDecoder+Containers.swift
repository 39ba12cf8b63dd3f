import Foundation

// The keyed, unkeyed and single-value containers of `DocumentDecoder`.
extension DocumentDecoder {
    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let source: KeyedValueSource
        let codingPath: [any CodingKey]
        let identity: DocumentIdentity?

        var allKeys: [Key] { source.sourceKeys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { source.sourceValue(forKey: key.stringValue) != nil }

        private func value(_ key: Key) throws -> Any {
            guard let value = source.sourceValue(forKey: key.stringValue) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath,
                    debugDescription: "No value for key '\(key.stringValue)'"))
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) is NSNull }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if let id = documentID(T.self, key) { return id }
            return try DocumentDecoder.unbox(try value(key), as: T.self, at: codingPath + [key])
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            if let id = documentID(T.self, key) { return id }
            guard let value = source.sourceValue(forKey: key.stringValue), !(value is NSNull) else { return nil }
            return try DocumentDecoder.unbox(value, as: T.self, at: codingPath + [key])
        }

        /// At the root, `@DocumentID` comes from the document (or the row's ID column), not the body.
        private func documentID<T>(_ type: T.Type, _ key: Key) -> T? {
            guard T.self == DocumentID.self, let identity else { return nil }
            switch identity {
            case .document(let id, let revisionID):
                return DocumentID(id: id, revisionID: revisionID) as? T
            case .row(let row):
                return DocumentID(id: row.value(forKey: key.stringValue) as? String, revisionID: nil) as? T
            }
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type,
                                                   forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try DocumentDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try DocumentDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            let key = CodableKey("super")
            return DocumentDecoder(value: source.sourceValue(forKey: "super") ?? NSNull(), codingPath: codingPath + [key])
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            DocumentDecoder(value: source.sourceValue(forKey: key.stringValue) ?? NSNull(), codingPath: codingPath + [key])
        }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let array: ArrayObject
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(array: ArrayObject, codingPath: [any CodingKey]) {
            self.array = array
            self.codingPath = codingPath
        }

        var count: Int? { array.count }
        var isAtEnd: Bool { currentIndex >= array.count }

        private var path: [any CodingKey] { codingPath + [CodableKey(index: currentIndex)] }

        private func current<T>(_ type: T.Type) throws -> Any {
            guard !isAtEnd, let value = array.value(at: currentIndex) else {
                throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "Unkeyed container is at end"))
            }
            return value
        }

        mutating func decodeNil() throws -> Bool {
            guard try current(Any.self) is NSNull else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let decoded = try DocumentDecoder.unbox(try current(T.self), as: T.self, at: path)
            currentIndex += 1
            return decoded
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let container = try DocumentDecoder(value: try current(type), codingPath: path).container(keyedBy: type)
            currentIndex += 1
            return container
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let container = try DocumentDecoder(value: try current([Any].self), codingPath: path).unkeyedContainer()
            currentIndex += 1
            return container
        }

        mutating func superDecoder() throws -> any Decoder {
            let decoder = DocumentDecoder(value: try current(Any.self), codingPath: path)
            currentIndex += 1
            return decoder
        }
    }

    struct SingleValueContainer: SingleValueDecodingContainer {
        let value: Any
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool { value is NSNull }

        func decode(_ type: Bool.Type) throws -> Bool {
            if let b = value as? Bool { return b }
            // Query expressions yield booleans as the integers 0 and 1 (LiteCore's semantics).
            if let n = DocumentDecoder.number(value, as: Int.self), n == 0 || n == 1 { return n == 1 }
            throw DocumentDecoder.mismatch(Bool.self, value, codingPath)
        }

        func decode(_ type: String.Type) throws -> String {
            guard let s = value as? String else { throw DocumentDecoder.mismatch(String.self, value, codingPath) }
            return s
        }

        func decode(_ type: Double.Type) throws -> Double { try number(Double.self) }
        func decode(_ type: Float.Type) throws -> Float { try number(Float.self) }
        func decode(_ type: Int.Type) throws -> Int { try number(Int.self) }
        func decode(_ type: Int8.Type) throws -> Int8 { try number(Int8.self) }
        func decode(_ type: Int16.Type) throws -> Int16 { try number(Int16.self) }
        func decode(_ type: Int32.Type) throws -> Int32 { try number(Int32.self) }
        func decode(_ type: Int64.Type) throws -> Int64 { try number(Int64.self) }
        func decode(_ type: UInt.Type) throws -> UInt { try number(UInt.self) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try number(UInt8.self) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try number(UInt16.self) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try number(UInt32.self) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try number(UInt64.self) }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try DocumentDecoder.unbox(value, as: T.self, at: codingPath)
        }

        private func number<N: Numeric>(_ type: N.Type) throws -> N {
            guard let n = DocumentDecoder.number(value, as: N.self) else {
                throw DocumentDecoder.mismatch(N.self, value, codingPath, "a number that fits \(N.self)")
            }
            return n
        }
    }
}
