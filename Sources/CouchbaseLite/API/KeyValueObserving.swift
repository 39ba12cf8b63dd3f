import Foundation

#if !canImport(ObjectiveC)
/// Linux's Foundation has no key-value observing; these stand-ins let 1.x apps' KVO code on
/// `CBLLiveQuery.rows` compile unchanged (see ``CBLKeyValueObserving``).
public struct NSKeyValueObservingOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let new = NSKeyValueObservingOptions(rawValue: 1)
    public static let old = NSKeyValueObservingOptions(rawValue: 2)
    public static let initial = NSKeyValueObservingOptions(rawValue: 4)
    public static let prior = NSKeyValueObservingOptions(rawValue: 8)
}

/// Keys of the `change` dictionary passed to `observeValue(forKeyPath:of:change:context:)`.
public struct NSKeyValueChangeKey: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let newKey = NSKeyValueChangeKey(rawValue: "new")
    public static let oldKey = NSKeyValueChangeKey(rawValue: "old")
    public static let kindKey = NSKeyValueChangeKey(rawValue: "kind")
    public static let notificationIsPriorKey = NSKeyValueChangeKey(rawValue: "notificationIsPrior")
}
#endif

/// Adopt this (with the `observeValue` method your class already has, minus `override`) to
/// observe `CBLLiveQuery.rows` as 1.x apps did with key-value observing.
public protocol CBLKeyValueObserving: AnyObject {
    func observeValue(forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
                      context: UnsafeMutableRawPointer?)
}
