import CouchbaseLite
import Foundation

/// CouchDB's `[chttpd_auth] password_regexp` setting: the regular expressions a new password must
/// match, each with the message a password that does not match is refused with.
///
/// The setting is an Erlang term, read as CouchDB reads it (`couch_util:parse_term`): `""` or
/// `"[]"` for none, otherwise a list whose elements are a regular expression string `"RE"`, a
/// tuple `{"RE"}`, or `{"RE", "Reason"}` to append a reason to the message. A setting that does
/// not parse, or is not a list, leaves the server unable to hash passwords: every password is
/// refused with 403, as CouchDB refuses it.
///
/// CouchDB reads the setting's bytes and matches each regular expression against the password's
/// UTF-8 bytes with Erlang's `re`: PCRE without Unicode mode, with Latin-1 character tables.
/// `.{10,}` counts bytes, `\d` is ASCII, `\w` and `[[:alpha:]]` take the Latin-1 letters. The
/// check here hands `NSRegularExpression` each byte as its Latin-1 character, in the pattern and
/// the password, with only `\n` as a line separator and the classes spelled out as PCRE's
/// tables have them (see `icuPattern(fromPCRE:)`). Spellings ICU reads otherwise than PCRE and
/// that are not rewritten (an octal escape `\41`, which ICU reads as a back reference) make the
/// requirement unusable (403).
struct PasswordRequirements: Sendable, Equatable {
    /// The message of every refused password; a requirement's reason follows it after a space.
    static let nonConformingMessage = "Password does not conform to requirements."
    /// The 403 message when the setting cannot be used.
    static let serverCannotHashMessage = "Server cannot hash passwords at this time."

    /// One element of the setting's list.
    enum Requirement: Sendable, Equatable {
        /// A regular expression the password must match somewhere, as the setting's bytes, and
        /// the message a password that does not is refused with.
        case pattern(bytes: [UInt8], message: String)
        /// An element of another shape (not a string, `{"RE"}` or `{"RE", Reason}`), or a regular
        /// expression that is not text: checking a password fails with 403 when it reaches it,
        /// as CouchDB fails only when it reaches such an element.
        case unusable

        /// The regular expression as text, or nil for ``unusable``.
        var pattern: String? {
            if case .pattern(let bytes, _) = self { return String(decoding: bytes, as: UTF8.self) }
            return nil
        }

        /// The message a password that does not match is refused with, or nil for ``unusable``.
        var message: String? {
            if case .pattern(_, let message) = self { return message }
            return nil
        }
    }

    /// The requirements in the setting's order, or nil when the setting is unusable as a whole
    /// (it does not parse, or it is not a list).
    let requirements: [Requirement]?

    /// No requirements: every password conforms.
    static let none = PasswordRequirements(requirements: [])

    private init(requirements: [Requirement]?) {
        self.requirements = requirements
    }

    /// The requirements of a `password_regexp` setting's text.
    init(setting: String) {
        if setting == "" || setting == "[]" {
            self.init(requirements: [])
            return
        }
        switch ErlangTermReader.term(of: Array(setting.utf8)) {
        case .list(let elements)?:
            self.init(requirements: elements.map(Self.requirement(from:)))
        case .improperList(let elements, _)?:
            // CouchDB walks the elements in order, then fails on the tail.
            self.init(requirements: elements.map(Self.requirement(from:)) + [.unusable])
        default:
            self.init(requirements: nil)
        }
    }

    /// Checks `password` against every requirement, in order.
    ///
    /// - Throws: `CBLError` 400 with the first unmet requirement's message; 403 "Server cannot
    ///   hash passwords at this time." when the setting, or the requirement reached, is unusable
    ///   (including a regular expression that does not compile).
    func check(_ password: String) throws {
        guard let requirements else { throw CBLError(403, Self.serverCannotHashMessage) }
        let subject = Self.byteText(Array(password.utf8))
        for requirement in requirements {
            guard case .pattern(let bytes, let message) = requirement,
                  let pattern = Self.icuPattern(fromPCRE: bytes),
                  let expression = try? NSRegularExpression(pattern: pattern, options: [.useUnixLineSeparators])
            else { throw CBLError(403, Self.serverCannotHashMessage) }
            let range = NSRange(location: 0, length: subject.utf16.count)
            if expression.firstMatch(in: subject, options: [], range: range) == nil {
                throw CBLError(400, message)
            }
        }
    }

    /// The requirement an element of the setting's list states (CouchDB's
    /// `get_password_regexp_and_error_msg`): a reason counts only when it is a non-empty list.
    private static func requirement(from element: ErlangTerm) -> Requirement {
        let expression: ErlangTerm
        var reason: ErlangTerm?
        switch element {
        case .list: expression = element
        case .tuple(let members) where members.count == 1: expression = members[0]
        case .tuple(let members) where members.count == 2: expression = members[0]; reason = members[1]
        default: return .unusable
        }
        // A non-list expression is an element of another shape; a list that is not text makes
        // Erlang's `re:run` fail, which CouchDB does not catch either.
        guard let bytes = expression.textBytes else { return .unusable }
        var message = nonConformingMessage
        // A reason that is a list but not text (atoms inside) CouchDB prints as an Erlang term;
        // it is left out here.
        if let reason, case .list(let reasonElements) = reason, !reasonElements.isEmpty, let reasonBytes = reason.textBytes {
            message += " " + String(decoding: reasonBytes, as: UTF8.self)
        }
        return .pattern(bytes: bytes, message: message)
    }

    /// Bytes as text for `NSRegularExpression`, each byte as the Latin-1 character of its value,
    /// so a multi-byte character counts as its bytes, as in PCRE without Unicode mode.
    private static func byteText(_ bytes: [UInt8]) -> String {
        var scalars = String.UnicodeScalarView()
        for byte in bytes { scalars.append(byteScalar(UInt32(byte))) }
        return String(scalars)
    }

    private static func byteScalar(_ byte: UInt32) -> Unicode.Scalar {
        Unicode.Scalar(UInt8(truncatingIfNeeded: byte))
    }

    /// The bytes each PCRE class matches with Erlang's Latin-1 character tables (probed with
    /// `re:run/3` on OTP 25, byte by byte), as ICU set ranges: ICU's own `\w`, `\s` and POSIX
    /// classes are Unicode's, which differ (`[[:punct:]]` leaves out `$+<=>^|~`, `\s` takes
    /// U+0085 and U+00A0).
    private static let latin1Classes: [String: String] = [
        "d": "30-39", "s": "9-D 20", "w": "30-39 41-5A 5F 61-7A AA B5 BA C0-D6 D8-F6 F8-FF",
        "alpha": "41-5A 61-7A AA B5 BA C0-D6 D8-F6 F8-FF", "alnum": "30-39 41-5A 61-7A AA B5 BA C0-D6 D8-F6 F8-FF",
        "upper": "41-5A C0-D6 D8-DE", "lower": "61-7A AA B5 BA DF-F6 F8-FF", "digit": "30-39",
        "xdigit": "30-39 41-46 61-66", "space": "9-D 20", "blank": "9 20",
        "punct": "21-2F 3A-40 5B-60 7B-7E A0-A9 AB-B4 B6-B9 BB-BF D7 F7", "cntrl": "0-1F 7F-9F",
        "graph": "21-7E A0-FF", "print": "20-7E A0-FF", "word": "30-39 41-5A 5F 61-7A AA B5 BA C0-D6 D8-F6 F8-FF",
        "ascii": "0-FF",
    ]

    /// An ICU set for a class of `latin1Classes`: `[…]`, or `[^…]` when negated.
    private static func latin1Set(_ name: String, negated: Bool) -> String? {
        guard let ranges = latin1Classes[name] else { return nil }
        let body = ranges.split(separator: " ").map { range in
            range.split(separator: "-").map { "\\x{" + $0 + "}" }.joined(separator: "-")
        }.joined()
        return (negated ? "[^" : "[") + body + "]"
    }

    /// A PCRE pattern (Erlang's `re`, OTP 25's PCRE 8) as an ICU pattern over `byteText(_:)`:
    /// the spellings the two read differently are rewritten — a brace that is not a `{n}`,
    /// `{n,}` or `{n,m}` quantifier is a literal in PCRE; `[` and `&` inside a class, and `]`
    /// first in one, are literals; `\d \s \w` (and negations) and POSIX classes are the bytes
    /// of Erlang's Latin-1 tables. Nil for what PCRE refuses: a `\x{…}` above 0xFF, an unknown
    /// POSIX class, a trailing backslash.
    private static func icuPattern(fromPCRE bytes: [UInt8]) -> String? {
        if bytes.isEmpty { return "(?:)" }  // ICU refuses an empty pattern; PCRE matches anywhere
        var out = String.UnicodeScalarView()
        func emit(_ text: String) { out.append(contentsOf: text.unicodeScalars) }
        func emitLiteral(_ byte: UInt8) {
            let scalar = byteScalar(UInt32(byte))
            if "{}[]&".unicodeScalars.contains(scalar) { out.append("\\") }
            out.append(scalar)
        }
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        var index = 0
        var inClass = false
        // Copies the escape at `index` (a backslash), rewriting `\x`; false for one PCRE refuses.
        func copyEscape() -> Bool {
            guard index + 1 < bytes.count else { return false }  // PCRE: "\\ at end of pattern"
            let next = bytes[index + 1]
            if next == UInt8(ascii: "Q") {
                // \Q…\E: everything up to \E is literal in both dialects.
                index += 2
                emit("\\Q")
                while index < bytes.count {
                    if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "E") { break }
                    out.append(byteScalar(UInt32(bytes[index]))); index += 1
                }
                emit("\\E")
                index = min(index + 2, bytes.count)
                return true
            }
            let classNames: [UInt8: (String, Bool)] = [
                UInt8(ascii: "d"): ("d", false), UInt8(ascii: "D"): ("d", true), UInt8(ascii: "s"): ("s", false),
                UInt8(ascii: "S"): ("s", true), UInt8(ascii: "w"): ("w", false), UInt8(ascii: "W"): ("w", true),
            ]
            if let (name, negated) = classNames[next], let set = latin1Set(name, negated: negated) {
                emit(set); index += 2
                return true
            }
            guard next == UInt8(ascii: "x") else {
                out.append("\\"); out.append(byteScalar(UInt32(next))); index += 2
                return true
            }
            index += 2
            var value: UInt32 = 0
            if index < bytes.count && bytes[index] == UInt8(ascii: "{") {
                var end = index + 1
                while end < bytes.count, let digit = Character(Unicode.Scalar(bytes[end])).hexDigitValue, value <= 0xFF {
                    value = value * 16 + UInt32(digit); end += 1
                }
                guard end < bytes.count, bytes[end] == UInt8(ascii: "}"), end > index + 1 else { return false }
                index = end + 1
            } else {
                var length = 0
                while length < 2, index < bytes.count, let digit = Character(Unicode.Scalar(bytes[index])).hexDigitValue {
                    value = value * 16 + UInt32(digit); index += 1; length += 1
                }
            }
            guard value <= 0xFF else { return false }
            emit("\\x{" + String(byteScalar(value).value, radix: 16) + "}")
            return true
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") {
                guard copyEscape() else { return nil }
                continue
            }
            if inClass {
                if byte == UInt8(ascii: "]") {
                    out.append("]"); inClass = false; index += 1
                } else if byte == UInt8(ascii: "["), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ":"),
                          let close = (index + 2..<bytes.count).first(where: { bytes[$0] == UInt8(ascii: "]") }),
                          bytes[close - 1] == UInt8(ascii: ":") {
                    // A POSIX class, [:alpha:] or [:^alpha:], as the bytes PCRE's tables give it.
                    var name = String(decoding: bytes[(index + 2)..<(close - 1)], as: UTF8.self)
                    let negated = name.hasPrefix("^")
                    if negated { name.removeFirst() }
                    guard let set = latin1Set(name, negated: negated) else { return nil }
                    emit(set)
                    index = close + 1
                } else {
                    emitLiteral(byte); index += 1
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "["):
                // PCRE refuses a POSIX class outside a class: `[:alpha:]` alone.
                if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ":"),
                   let close = (index + 2..<bytes.count).first(where: { bytes[$0] == UInt8(ascii: "]") }),
                   bytes[close - 1] == UInt8(ascii: ":") { return nil }
                out.append("["); index += 1; inClass = true
                if index < bytes.count && bytes[index] == UInt8(ascii: "^") { out.append("^"); index += 1 }
                if index < bytes.count && bytes[index] == UInt8(ascii: "]") { emit("\\]"); index += 1 }
            case UInt8(ascii: "{"):
                // A quantifier only as {n}, {n,} or {n,m}.
                var end = index + 1
                while end < bytes.count && isDigit(bytes[end]) { end += 1 }
                var isQuantifier = end > index + 1
                if isQuantifier && end < bytes.count && bytes[end] == UInt8(ascii: ",") {
                    end += 1
                    while end < bytes.count && isDigit(bytes[end]) { end += 1 }
                }
                isQuantifier = isQuantifier && end < bytes.count && bytes[end] == UInt8(ascii: "}")
                if isQuantifier {
                    for position in index...end { out.append(byteScalar(UInt32(bytes[position]))) }
                    index = end + 1
                } else {
                    emit("\\{"); index += 1
                }
            case UInt8(ascii: "(") where index + 2 < bytes.count && bytes[index + 1] == UInt8(ascii: "?") && bytes[index + 2] == UInt8(ascii: ")"):
                index += 3  // `(?)`, an empty option setting: PCRE ignores it, ICU refuses it
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                emitLiteral(byte); index += 1
            default:
                out.append(byteScalar(UInt32(byte))); index += 1
            }
        }
        return String(out)
    }
}

