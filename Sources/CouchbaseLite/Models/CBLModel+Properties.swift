import Foundation

extension CBLModel {
    /// The document's `type` property, which ``CBLModelFactory`` maps to a model class. Set
    /// automatically on models made with ``init(forNewDocumentIn:)`` when the class is registered.
    public var type: String? {
        get { getValueOfProperty("type") as? String }
        set { setValue(newValue, ofProperty: "type") }
    }
}

/// String-keyed properties from a `[AnyHashable: Any]` a hook returned.
func stringKeyed(_ properties: [AnyHashable: Any]) -> [String: Any] {
    var out: [String: Any] = [:]
    out.reserveCapacity(properties.count)
    for (key, value) in properties {
        if let key = key.base as? String { out[key] = value }
    }
    return out
}
