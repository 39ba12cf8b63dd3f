import Fleece
import Foundation

/// An array inside a 2.x document (read-only), with the typed accessors of 2.x's `ArrayProtocol`.
/// (`MutableArrayObject` overrides every accessor; it has no Fleece array.)
// @unchecked because a read-only view of immutable Fleece data (lets only); the mutable subclass locks.
public class ArrayObject: ArrayFragment, Sequence, @unchecked Sendable {
    let fleeceArray: FleeceArray?
    let context: DocumentContext?

    init(_ array: FleeceArray?, context: DocumentContext?) {
        self.fleeceArray = array
        self.context = context
    }

    public var count: Int { fleeceArray?.count ?? 0 }

    private func item(_ index: Int) -> FleeceValue? {
        guard let fleeceArray, index >= 0, index < fleeceArray.count else { return nil }
        return fleeceArray[index]
    }

    /// The item at `index` as an API object, or nil when out of range.
    public func value(at index: Int) -> Any? {
        guard let context else { return nil }
        return item(index).map { context.apiValue($0, inAttachments: false) }
    }
    public func string(at index: Int) -> String? { item(index)?.stringValue }
    public func number(at index: Int) -> NSNumber? { ValueCoercion.number(item(index)) }
    public func int(at index: Int) -> Int { Int(truncatingIfNeeded: ValueCoercion.int64(item(index))) }
    public func int64(at index: Int) -> Int64 { ValueCoercion.int64(item(index)) }
    public func float(at index: Int) -> Float { Float(ValueCoercion.double(item(index))) }
    public func double(at index: Int) -> Double { ValueCoercion.double(item(index)) }
    public func boolean(at index: Int) -> Bool { ValueCoercion.boolean(item(index)) }
    public func date(at index: Int) -> Date? { ValueCoercion.date(item(index)) }
    public func blob(at index: Int) -> Blob? { item(index)?.dictValue.flatMap { context?.blob($0, inAttachments: false) } }
    public func array(at index: Int) -> ArrayObject? { item(index)?.arrayValue.map { ArrayObject($0, context: context) } }
    public func dictionary(at index: Int) -> DictionaryObject? { item(index)?.dictValue.map { DictionaryObject($0, context: context) } }

    /// The item at `index` (see `value(at:)`).
    public subscript(index: Int) -> Fragment {
        Fragment { [self] in index >= 0 && index < count ? value(at: index) : nil }
    }

    /// The whole array as plain Swift values (blobs stay `Blob` objects).
    public func toArray() -> [Any] {
        guard let fleeceArray, let context else { return [] }
        return fleeceArray.map { context.foundationValue($0, inAttachments: false) }
    }

    public func makeIterator() -> IndexingIterator<[Any]> {
        guard let fleeceArray, let context else { return [Any]().makeIterator() }
        return fleeceArray.map { context.apiValue($0, inAttachments: false) }.makeIterator()
    }
}
