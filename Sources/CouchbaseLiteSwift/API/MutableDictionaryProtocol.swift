import Foundation

/// The keyed setters a mutable document and a mutable dictionary share (2.x's
/// `MutableDictionaryProtocol`): each typed setter stores through `setValue(_:forKey:)`.
public protocol MutableDictionaryProtocol: AnyObject {
    @discardableResult func setValue(_ value: Any?, forKey key: String) -> Self
}

extension MutableDictionaryProtocol {
    @discardableResult public func setString(_ value: String?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setNumber(_ value: NSNumber?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setInt(_ value: Int, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setInt64(_ value: Int64, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setFloat(_ value: Float, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setDouble(_ value: Double, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setBoolean(_ value: Bool, forKey key: String) -> Self { setValue(value, forKey: key) }
    /// Stores the date as its ISO-8601 string (UTC, milliseconds), as 2.x does.
    @discardableResult public func setDate(_ value: Date?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setBlob(_ value: Blob?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setArray(_ value: ArrayObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
    @discardableResult public func setDictionary(_ value: DictionaryObject?, forKey key: String) -> Self { setValue(value, forKey: key) }
}
