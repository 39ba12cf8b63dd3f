import JSONCore

/// A string collation for `Expression.collate(_:)` (2.x `CollationProtocol`).
public protocol CollationProtocol {}

extension CollationProtocol {
    /// The collation's `COLLATE` options dictionary (spec 9.1).
    var options: JSONObject {
        switch self {
        case let c as ASCIICollation: return ["UNICODE": false, "CASE": .bool(!c.ignoresCase)]
        case let c as UnicodeCollation:
            var d: JSONObject = ["UNICODE": true, "CASE": .bool(!c.ignoresCase), "DIAC": .bool(!c.ignoresAccents)]
            if let locale = c.localeName { d["LOCALE"] = .string(locale) }
            return d
        default: return ["UNICODE": false]
        }
    }
}

/// Collation factories (2.x `Collation`).
public final class Collation {
    private init() {}
    /// Binary ASCII comparison (optionally ignoring case).
    public static func ascii() -> ASCIICollation { ASCIICollation() }
    /// Unicode (ICU) comparison, optionally ignoring case and accents, in a locale.
    public static func unicode() -> UnicodeCollation { UnicodeCollation() }
}

/// ASCII collation options.
public final class ASCIICollation: CollationProtocol {
    var ignoresCase = false
    /// Sets whether letter case is ignored.
    @discardableResult public func ignoreCase(_ ignoreCase: Bool) -> Self { ignoresCase = ignoreCase; return self }
}

/// Unicode collation options.
public final class UnicodeCollation: CollationProtocol {
    var ignoresCase = false
    var ignoresAccents = false
    var localeName: String?
    /// Sets whether letter case is ignored.
    @discardableResult public func ignoreCase(_ ignoreCase: Bool) -> Self { ignoresCase = ignoreCase; return self }
    /// Sets whether accents (diacritics) are ignored.
    @discardableResult public func ignoreAccents(_ ignoreAccents: Bool) -> Self { ignoresAccents = ignoreAccents; return self }
    /// Sets the locale (`"en"`, `"sv"`, …); nil = the default.
    @discardableResult public func locale(_ locale: String?) -> Self { localeName = locale; return self }
}
