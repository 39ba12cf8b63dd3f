import Foundation

/// Objects whose values can be read by key, as 1.x code and predicates read them with key-value
/// coding (which Linux Foundation lacks). Query rows, documents, revisions, attachments and
/// models adopt it; adopt it in your own classes to make predicates see their keys.
public protocol CBLKeyValueCoding: AnyObject {
    /// The value for `key`; nil if there is none.
    func value(forKey key: String) -> Any?
}

extension CBLKeyValueCoding {
    /// The value at a dotted key path (`"value.address.city"`), through objects, dictionaries and arrays.
    public func value(forKeyPath keyPath: String) -> Any? {
        KeyValueCoding.value(of: self, forKeyPath: keyPath)
    }
}

extension CBLQueryRow: CBLKeyValueCoding {}
extension CBLModel: CBLKeyValueCoding {}

extension CBLDocument: CBLKeyValueCoding {
    /// Key-value coding: `documentID`, `properties`, `userProperties`, `currentRevisionID`,
    /// `currentRevision`, `isDeleted`, `isGone`, `database`, `modelObject`; any other key reads
    /// that property of the current revision (so a predicate can say `type == 'task'`).
    public func value(forKey key: String) -> Any? {
        switch key {
        case "documentID": return documentID
        case "abbreviatedID": return abbreviatedID
        case "properties": return properties
        case "userProperties": return userProperties
        case "currentRevisionID": return currentRevisionID
        case "currentRevision": return currentRevision
        case "isDeleted", "deleted": return isDeleted
        case "isGone": return isGone
        case "database": return database
        case "modelObject": return modelObject
        default: return property(forKey: key)
        }
    }
}

extension CBLRevision: CBLKeyValueCoding {
    /// Key-value coding: `revisionID`, `properties`, `userProperties`, `document`, `isDeletion`,
    /// `sequence`, `attachmentNames`, `parentRevisionID`; any other key reads that property.
    public func value(forKey key: String) -> Any? {
        switch key {
        case "revisionID": return revisionID
        case "properties": return properties
        case "userProperties": return userProperties
        case "document": return document
        case "documentID": return document.documentID
        case "isDeletion": return isDeletion
        case "sequence": return sequence
        case "attachmentNames": return attachmentNames
        case "parentRevisionID": return parentRevisionID
        default: return property(forKey: key)
        }
    }
}

extension CBLAttachment: CBLKeyValueCoding {
    /// Key-value coding: `name`, `contentType`, `length`, `encodedLength`, `encoding`, `digest`,
    /// `revpos`, `metadata`, `document`, `revision`.
    public func value(forKey key: String) -> Any? {
        switch key {
        case "name": return name
        case "contentType": return contentType
        case "length": return Int(length)
        case "encodedLength": return Int(encodedLength)
        case "encoding": return encoding
        case "digest": return digest
        case "revpos": return revpos
        case "metadata": return metadata
        case "document": return document
        case "revision": return revision
        default: return metadata[key]
        }
    }
}

extension Dictionary where Key == String, Value == Any {
    /// Sets (or with nil, removes) a value, as `NSMutableDictionary.setValue(_:forKey:)` did: lets
    /// 1.x code that edited a revision's properties in place, `newRev.properties?.setValue(x,
    /// forKey: "name")`, work on the Swift dictionary (the revision's setter stores the result).
    public mutating func setValue(_ value: Any?, forKey key: String) {
        self[key] = value
    }

    /// The value for a key (`NSDictionary.value(forKey:)`).
    public func value(forKey key: String) -> Any? {
        self[key]
    }

    /// The value at a dotted key path, through nested dictionaries, arrays and objects.
    public func value(forKeyPath keyPath: String) -> Any? {
        KeyValueCoding.value(of: self, forKeyPath: keyPath)
    }
}

/// Key-value coding over the values documents and queries hold.
enum KeyValueCoding {
    static func value(of object: Any, forKeyPath keyPath: String) -> Any? {
        var current: Any? = object
        for key in keyPath.split(separator: ".") {
            guard let c = current else { return nil }
            current = value(of: c, forKey: String(key))
        }
        return current
    }

    /// `object`'s value for `key`: a dictionary entry, a ``CBLKeyValueCoding`` value, or, on an
    /// array, the array of its elements' values; `@count`, `@sum`, `@avg`, `@min` and `@max` on
    /// arrays (and `@count` on dictionaries) as in Foundation.
    static func value(of object: Any, forKey key: String) -> Any? {
        if key.hasPrefix("@") { return collectionOperator(key, on: object) }
        switch object {
        case let dict as [String: Any]: return dict[key]
        case let kvc as CBLKeyValueCoding: return kvc.value(forKey: key)
        case let array as [Any]: return array.map { value(of: $0, forKey: key) ?? NSNull() }
        case let dict as NSDictionary: return dict[key]
        default: return nil
        }
    }

    private static func collectionOperator(_ op: String, on object: Any) -> Any? {
        let items: [Any]
        switch object {
        case let array as [Any]: items = array
        case let dict as [String: Any]:
            return op == "@count" ? dict.count : nil
        default: return nil
        }
        switch op {
        case "@count": return items.count
        case "@sum", "@avg":
            let numbers = items.compactMap { PredicateValue.normalize($0).flatMap(JSONScalar.double) }
            let sum = numbers.reduce(0, +)
            if op == "@sum" { return Int(exactly: sum) ?? sum }
            return numbers.isEmpty ? nil : sum / Double(numbers.count)
        case "@min", "@max":
            let values = items.compactMap { PredicateValue.normalize($0) }
            return values.dropFirst().reduce(values.first) { best, next in
                guard let best else { return next }
                let order = PredicateValue.compare(next, best, options: [])
                return (op == "@min" ? order == .orderedAscending : order == .orderedDescending) ? next : best
            }
        default: return nil
        }
    }
}
