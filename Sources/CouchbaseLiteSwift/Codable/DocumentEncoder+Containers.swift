import Foundation

// The keyed, unkeyed and single-value containers of `DocumentEncoder`.
extension DocumentEncoder {
    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let dictionary: MutableDictionaryObject
        let codingPath: [any CodingKey]
        let isRoot: Bool

        mutating func encodeNil(forKey key: Key) throws {
            dictionary.setValue(NSNull(), forKey: key.stringValue)
        }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            if isRoot, value is DocumentID { return }
            dictionary.setValue(try DocumentEncoder.box(value, at: codingPath + [key]), forKey: key.stringValue)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = MutableDictionaryObject()
            dictionary.setValue(nested, forKey: key.stringValue)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(dictionary: nested, codingPath: codingPath + [key],
                                                                    isRoot: false))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = MutableArrayObject()
            dictionary.setValue(nested, forKey: key.stringValue)
            return UnkeyedContainer(array: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder {
            superEncoder(named: "super", key: CodableKey("super"))
        }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            superEncoder(named: key.stringValue, key: key)
        }

        private func superEncoder(named name: String, key: any CodingKey) -> any Encoder {
            let dictionary = self.dictionary
            return DocumentEncoder(codingPath: codingPath + [key]) { dictionary.setValue($0, forKey: name) }
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let array: MutableArrayObject
        let codingPath: [any CodingKey]
        var count: Int { array.count }

        private var nextPath: [any CodingKey] { codingPath + [CodableKey(index: array.count)] }

        mutating func encodeNil() throws {
            array.addValue(NSNull())
        }

        mutating func encode<T: Encodable>(_ value: T) throws {
            array.addValue(try DocumentEncoder.box(value, at: nextPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let path = nextPath
            let nested = MutableDictionaryObject()
            array.addValue(nested)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(dictionary: nested, codingPath: path, isRoot: false))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let path = nextPath
            let nested = MutableArrayObject()
            array.addValue(nested)
            return UnkeyedContainer(array: nested, codingPath: path)
        }

        mutating func superEncoder() -> any Encoder {
            let path = nextPath
            let array = self.array
            let index = array.count
            array.addValue(NSNull())
            return DocumentEncoder(codingPath: path) { array.setValue($0, at: index) }
        }
    }

    struct SingleValueContainer: SingleValueEncodingContainer {
        let encoder: DocumentEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }

        mutating func encodeNil() throws {
            encoder.set(NSNull())
        }

        mutating func encode<T: Encodable>(_ value: T) throws {
            encoder.set(try DocumentEncoder.box(value, at: codingPath))
        }
    }
}
