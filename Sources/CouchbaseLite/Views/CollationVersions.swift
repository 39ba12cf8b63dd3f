import CCollation

/// The ICU library and collator versions view keys are ordered with (CouchDB reports them in
/// `_node/_local/_versions` and in a view's `_info`: an index made under another collator
/// version may order some strings differently).
package enum CollationVersions {
    /// ICU's version, e.g. `72.1`, and the JSON collation's collator version, e.g. `153.120`.
    package static let current: (library: String, collator: String) = {
        var library = [CChar](repeating: 0, count: 32)
        var collator = [CChar](repeating: 0, count: 32)
        cbl_collation_versions(&library, &collator, 32)
        return (String(decoding: library.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                String(decoding: collator.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }()
}
