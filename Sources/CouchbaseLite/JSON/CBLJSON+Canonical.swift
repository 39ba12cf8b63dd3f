import JSONCore

/// Canonical 1.x JSON (the form revisions are stored and digested in) as text, for tools that
/// print documents and query rows (`cbl`) with the package's JSON engine.
extension CBLJSON {
    /// `value` as canonical JSON: compact, object keys sorted by UTF-16 code units at every level,
    /// non-ASCII as raw UTF-8, `/` unescaped, any JSON value at the top level.
    package static func canonicalString(_ value: Any) throws -> String {
        try JSON.string(value, sortedKeys: true)
    }

    /// The order of object keys in canonical JSON (UTF-16 code units), for writing an object
    /// member by member.
    package static func canonicalKeyPrecedes(_ a: String, _ b: String) -> Bool {
        JSON.utf16Precedes(a, b)
    }
}
