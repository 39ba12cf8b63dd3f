import CCollation
import SQLiteKit

/// `LCUnicode_…` collations (spec 9.3), registered when a query or index uses one.
extension QueryFunctions {
    /// Registers `LCUnicode_<C|_><D|_>_<locale>` (spec 9.3) unless the connection has it.
    static func registerCollation(_ name: String, on file: DataFile) throws {
        let connection = file.connection
        if try connection.hasCollation(name) { return }
        let chars = Array(name)
        let prefix = Array("LCUnicode_")
        guard chars.count >= prefix.count + 3, Array(chars[..<prefix.count]) == prefix, chars[prefix.count + 2] == "_" else { return }
        let caseSensitive = chars[prefix.count] != "_"
        let diacriticSensitive = chars[prefix.count + 1] != "_"
        let localeID = String(chars[(prefix.count + 3)...])
        guard let collator = UnicodeCollator(locale: localeID, caseSensitive: caseSensitive,
                                             diacriticSensitive: diacriticSensitive) else {
            throw CouchbaseLiteError(.invalidQuery, "Cannot open a Unicode collator for locale '\(localeID)'")
        }
        try connection.createCollation(name) { a, b in
            collator.compare(a, b)
        }
    }
}

/// An ICU collator as LiteCore sets one up for `LCUnicode_…` (spec 9.3), through the C target.
// @unchecked because ICU's `ucol_strcoll` is thread-safe on a collator that is not changed after it is opened.
final class UnicodeCollator: @unchecked Sendable {
    private let handle: OpaquePointer

    init?(locale: String, caseSensitive: Bool, diacriticSensitive: Bool) {
        guard let h = cbl_unicode_collator_open(locale, caseSensitive ? 1 : 0, diacriticSensitive ? 1 : 0) else { return nil }
        handle = h
    }

    deinit { cbl_unicode_collator_close(handle) }

    /// -1, 0 or 1 for two UTF-8 strings (ICU's const compare: safe from any thread).
    func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int32 {
        Int32(cbl_unicode_collator_compare(handle, a.baseAddress, a.count, b.baseAddress, b.count))
    }
}
