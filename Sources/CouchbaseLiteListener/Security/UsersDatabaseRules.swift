import CouchbaseLite
import Foundation

/// The rules a user document in the `_users` database must follow, as CouchDB 3.4's
/// `_design/_auth` `validate_doc_update` function enforces them: the same checks, in the same
/// order, with the same messages.
///
/// CouchDB runs its rules as JavaScript; here they run as Swift, and ``designDocumentSource`` is
/// the JavaScript text stored in `_design/_auth` so that clients reading the design document see
/// what is enforced. The Swift follows JavaScript's semantics where a malformed document makes
/// them visible — truthiness (`!doc.name`), `typeof`, strict and loose equality, string
/// concatenation (`"org.couchdb.user:" + name` for a name that is not a string) — so a
/// document CouchDB accepts is accepted and one it refuses is refused with the same message.
/// Where CouchDB's function itself fails with a JavaScript `TypeError` (a non-administrator
/// deleting a document that has no previous revision, a name that is a number, roles stored as a
/// string), the refusal is a 500, as CouchDB answers a failing validation function.
///
/// The caller runs these rules after the document's `password` has been replaced by its hash
/// (`CouchPasswords.hashingPassword(of:iterations:prf:)`), as CouchDB's `before_doc_update` does
/// first, and after checking the password against the ``PasswordRequirements``.
enum UsersDatabaseRules {
    /// The prefix of every user document's ID: `org.couchdb.user:NAME`.
    static let userDocumentIDPrefix = "org.couchdb.user:"

    /// Refuses `newDoc` as CouchDB 3.4's `_users` validation function does.
    ///
    /// - Parameters:
    ///   - newDoc: the document being saved (with `_deleted: true` for a deletion).
    ///   - oldDoc: the revision it replaces, or nil when the document is new.
    ///   - userCtx: who is saving it: `name` (a string, or null/absent when anonymous) and `roles`.
    ///   - secObj: the database's security object (`admins.names`, `admins.roles`).
    /// - Throws: `CBLError` 403 with CouchDB's message when a rule refuses the document; 500
    ///   where CouchDB's function fails with a JavaScript error instead.
    static func validate(newDoc: [String: Any], oldDoc: [String: Any]?, userCtx: [String: Any], secObj: [String: Any]) throws {
        let userName = ScriptValue(userCtx["name"])
        let userRoles = ScriptValue(userCtx["roles"]).elements
        let isServerAdmin = userRoles.contains { $0.isStrictlyEqual(to: "_admin") }

        // Deletions skip every other rule: only a server admin or the user themself may delete.
        if ScriptValue(newDoc["_deleted"]).isStrictlyEqual(to: .boolean(true)) {
            if isServerAdmin { return }
            guard let oldDoc else { throw scriptFailure("Cannot read property 'name' of null (oldDoc.name)") }
            if userName.isLooselyEqual(to: ScriptValue(oldDoc["name"])) { return }
            throw refusal("Only admins may delete other user docs.")
        }

        if !ScriptValue(newDoc["type"]).isStrictlyEqual(to: "user") { throw refusal("doc.type must be user") }

        let name = ScriptValue(newDoc["name"])
        if !name.isTruthy { throw refusal("doc.name is required") }

        let rolesValue = ScriptValue(newDoc["roles"])
        if !rolesValue.isTruthy { throw refusal("doc.roles must exist") }
        guard case .array(let roles) = rolesValue else { throw refusal("doc.roles must be an array") }
        if roles.contains(where: { $0.typeName != "string" }) { throw refusal("doc.roles can only contain strings") }

        if !ScriptValue(newDoc["_id"]).isStrictlyEqual(to: .string(userDocumentIDPrefix + name.stringConversion)) {
            throw refusal("Doc ID must be of the form org.couchdb.user:name")
        }

        if let oldDoc, !ScriptValue(oldDoc["name"]).isStrictlyEqual(to: name) {
            throw refusal("Usernames can not be changed.")
        }

        // CouchDB's message has no space after "salt.": kept as it is.
        if ScriptValue(newDoc["password_sha"]).isTruthy && !ScriptValue(newDoc["salt"]).isTruthy {
            throw refusal("Users with password_sha must have a salt.See /_utils/script/couch.js for example code.")
        }

        let scheme = ScriptValue(newDoc["password_scheme"])
        if scheme.isTruthy && !scheme.isStrictlyEqual(to: "simple") && !scheme.isStrictlyEqual(to: "pbkdf2") {
            throw refusal("Password scheme `\(scheme.stringConversion)` not supported.")
        }
        if scheme.isStrictlyEqual(to: "pbkdf2") {
            if ScriptValue(newDoc["iterations"]).typeName != "number" { throw refusal("iterations must be a number.") }
            if ScriptValue(newDoc["derived_key"]).typeName != "string" { throw refusal("derived_key must be a string.") }
        }

        if try !isServerOrDatabaseAdmin(isServerAdmin: isServerAdmin, userName: userName, userRoles: userRoles, secObj: secObj) {
            if let oldDoc {
                if !userName.isStrictlyEqual(to: name) { throw refusal("You may only update your own user document.") }
                let oldRolesValue = ScriptValue(oldDoc["roles"])
                let oldRoles: [ScriptValue]
                if !oldRolesValue.isTruthy {
                    oldRoles = []
                } else if case .array(let stored) = oldRolesValue {
                    oldRoles = stored
                } else {
                    throw scriptFailure("(oldDoc.roles || []).sort is not a function")
                }
                let oldSorted = ScriptValue.sortedAsJavaScriptSorts(oldRoles)
                let newSorted = ScriptValue.sortedAsJavaScriptSorts(roles)
                if oldSorted.count != newSorted.count
                    || zip(oldSorted, newSorted).contains(where: { !$0.isStrictlyEqual(to: $1) }) {
                    throw refusal("Only _admin may edit roles")
                }
            } else if !roles.isEmpty {
                throw refusal("Only _admin may set roles")
            }
        }

        // `_metrics` is the one system role a user document may carry (CouchDB 3.x's metrics access).
        for case .string(let role) in roles where role != "_metrics" && role.utf16.first == underscore {
            throw refusal("No system roles (starting with underscore) in users db.")
        }

        if name.firstElement.isStrictlyEqual(to: "_") { throw refusal("Username may not start with underscore.") }

        // `name.indexOf(":")`: a substring search for a string, an element search for an array.
        switch name {
        case .string(let text) where text.utf16.contains(colon):
            throw refusal("Character `:` is not allowed in usernames.")
        case .array(let elements) where elements.contains(where: { $0.isStrictlyEqual(to: ":") }):
            throw refusal("Character `:` is not allowed in usernames.")
        case .string, .array:
            break
        default:
            throw scriptFailure("newDoc.name.indexOf is not a function")
        }
    }

    private static let underscore = UInt16(UInt8(ascii: "_"))
    private static let colon = UInt16(UInt8(ascii: ":"))

    /// The admin test of CouchDB's function: a server admin (role `_admin`), or a database admin
    /// by name or by role in the security object. Only a server admin may delete other users.
    private static func isServerOrDatabaseAdmin(isServerAdmin: Bool, userName: ScriptValue, userRoles: [ScriptValue],
                                                secObj: [String: Any]) throws -> Bool {
        if isServerAdmin { return true }
        let admins = ScriptValue(secObj["admins"])
        let adminNames = admins.member("names")
        if adminNames.isTruthy, try adminNames.indexOf(userName, describedAs: "secObj.admins.names") != -1 { return true }
        let adminRoles = admins.member("roles")
        if adminRoles.isTruthy {
            for role in userRoles where try adminRoles.indexOf(role, describedAs: "secObj.admins.roles") != -1 { return true }
        }
        return false
    }

    private static func refusal(_ message: String) -> CBLError { CBLError(403, message) }

    /// A JavaScript `TypeError` in CouchDB's function: CouchDB answers 500 for it.
    private static func scriptFailure(_ message: String) -> CBLError { CBLError(500, "TypeError: " + message) }

    /// The `validate_doc_update` function stored in the `_users` database's `_design/_auth`.
    ///
    /// It states the same rules as ``validate(newDoc:oldDoc:userCtx:secObj:)``, in the same order
    /// and with the same messages; the listener runs the Swift rules, and this text is what
    /// clients (Fauxton, replicators copying `_users`) read and what CouchDB would run.
    static let designDocumentSource = #"""
    function (newDoc, oldDoc, userCtx, secObj) {
        function refuse(reason) {
            throw({forbidden: reason});
        }
        function isServerAdmin() {
            return userCtx.roles.indexOf('_admin') !== -1;
        }

        // A deletion is checked for who deletes, nothing else.
        if (newDoc._deleted === true) {
            if (isServerAdmin() || userCtx.name == oldDoc.name) {
                return;
            }
            refuse('Only admins may delete other user docs.');
        }

        if (newDoc.type !== 'user') {
            refuse('doc.type must be user');
        }
        if (!newDoc.name) {
            refuse('doc.name is required');
        }
        if (!newDoc.roles) {
            refuse('doc.roles must exist');
        }
        if (!Array.isArray(newDoc.roles)) {
            refuse('doc.roles must be an array');
        }
        newDoc.roles.forEach(function (role) {
            if (typeof role !== 'string') {
                refuse('doc.roles can only contain strings');
            }
        });
        if (newDoc._id !== 'org.couchdb.user:' + newDoc.name) {
            refuse('Doc ID must be of the form org.couchdb.user:name');
        }
        if (oldDoc && oldDoc.name !== newDoc.name) {
            refuse('Usernames can not be changed.');
        }
        if (newDoc.password_sha && !newDoc.salt) {
            refuse('Users with password_sha must have a salt.' +
                'See /_utils/script/couch.js for example code.');
        }
        if (newDoc.password_scheme &&
                newDoc.password_scheme !== 'simple' && newDoc.password_scheme !== 'pbkdf2') {
            refuse('Password scheme `' + newDoc.password_scheme + '` not supported.');
        }
        if (newDoc.password_scheme === 'pbkdf2') {
            if (typeof newDoc.iterations !== 'number') {
                refuse('iterations must be a number.');
            }
            if (typeof newDoc.derived_key !== 'string') {
                refuse('derived_key must be a string.');
            }
        }

        function isDatabaseAdmin() {
            var admins = secObj && secObj.admins;
            if (admins && admins.names && admins.names.indexOf(userCtx.name) !== -1) {
                return true;
            }
            if (admins && admins.roles) {
                for (var r = 0; r < userCtx.roles.length; r++) {
                    if (admins.roles.indexOf(userCtx.roles[r]) !== -1) {
                        return true;
                    }
                }
            }
            return false;
        }

        if (!isServerAdmin() && !isDatabaseAdmin()) {
            if (oldDoc) {
                if (userCtx.name !== newDoc.name) {
                    refuse('You may only update your own user document.');
                }
                var before = (oldDoc.roles || []).sort();
                var after = newDoc.roles.slice().sort();
                var unchanged = before.length === after.length &&
                    before.every(function (role, i) { return role === after[i]; });
                if (!unchanged) {
                    refuse('Only _admin may edit roles');
                }
            } else if (newDoc.roles.length > 0) {
                refuse('Only _admin may set roles');
            }
        }

        // _metrics is the one system role a user may hold.
        newDoc.roles.forEach(function (role) {
            if (role !== '_metrics' && role[0] === '_') {
                refuse('No system roles (starting with underscore) in users db.');
            }
        });
        if (newDoc.name[0] === '_') {
            refuse('Username may not start with underscore.');
        }
        if (newDoc.name.indexOf(':') !== -1) {
            refuse('Character `:` is not allowed in usernames.');
        }
    }
    """#
}

/// A JSON value as CouchDB's JavaScript validation function sees it, with the few operations of
/// JavaScript the `_users` rules depend on.
private enum ScriptValue {
    case undefined
    case null
    case boolean(Bool)
    case number(Double)
    case string(String)
    case array([ScriptValue])
    case object([String: Any])

    /// The class every boolean `NSNumber` belongs to (JSONSerialization's `true`/`false`), which
    /// tells a boolean from the number 1 or 0.
    private static let booleanNumberClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// The value a member of a Foundation dictionary holds: nil (a missing member) is
    /// `undefined`; `NSNull` and an empty optional are `null`.
    init(_ value: Any?) {
        guard let value else { self = .undefined; return }
        let valueType = type(of: value)
        // Exact native types first: a native Int also answers `is NSNumber` on Linux.
        if valueType == String.self, let text = value as? String { self = .string(text); return }
        if valueType == Bool.self, let flag = value as? Bool { self = .boolean(flag); return }
        if !(valueType is NSNumber.Type) {
            if let integer = value as? any BinaryInteger { self = .number(Double(integer)); return }
            if let number = value as? any BinaryFloatingPoint { self = .number(Self.double(number)); return }
        }
        if let number = value as? NSNumber {
            self = ObjectIdentifier(type(of: number)) == Self.booleanNumberClass ? .boolean(number.boolValue) : .number(number.doubleValue)
            return
        }
        if let text = value as? String { self = .string(text); return }
        if value is NSNull { self = .null; return }
        if let members = value as? [String: Any] { self = .object(members); return }
        if let elements = value as? [Any] { self = .array(elements.map { ScriptValue($0) }); return }
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            self = mirror.children.first.map { ScriptValue($0.value) } ?? .null
            return
        }
        self = .undefined
    }

    private static func double<Number: BinaryFloatingPoint>(_ number: Number) -> Double { Double(number) }

    /// JavaScript's `typeof` (`"object"` for null and arrays).
    var typeName: String {
        switch self {
        case .undefined: return "undefined"
        case .boolean: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .null, .array, .object: return "object"
        }
    }

    /// JavaScript's truthiness: false for `undefined`, `null`, `false`, `0`, `NaN` and `""`.
    var isTruthy: Bool {
        switch self {
        case .undefined, .null: return false
        case .boolean(let flag): return flag
        case .number(let number): return number != 0 && !number.isNaN
        case .string(let text): return !text.isEmpty
        case .array, .object: return true
        }
    }

    /// The value's members when it is an array, else none (the `userCtx.roles` of an odd context).
    var elements: [ScriptValue] {
        if case .array(let elements) = self { return elements }
        return []
    }

    /// `value.member` for an object; `undefined` for anything else (no other value the rules
    /// read has members of these names).
    func member(_ name: String) -> ScriptValue {
        if case .object(let members) = self { return ScriptValue(members[name]) }
        return .undefined
    }

    /// `value[0]`: a string's first UTF-16 unit, an array's first element, an object's member `"0"`.
    var firstElement: ScriptValue {
        switch self {
        case .string(let text): return text.utf16.first.map { .string(String(utf16CodeUnits: [$0], count: 1)) } ?? .undefined
        case .array(let elements): return elements.first ?? .undefined
        case .object: return member("0")
        default: return .undefined
        }
    }

    /// JavaScript's `===`. Strings compare by UTF-16 units, as JavaScript does (not by Swift's
    /// canonical equivalence); two arrays or objects are never the same object here.
    func isStrictlyEqual(to other: ScriptValue) -> Bool {
        switch (self, other) {
        case (.undefined, .undefined), (.null, .null): return true
        case (.boolean(let a), .boolean(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a.utf16.elementsEqual(b.utf16)
        default: return false
        }
    }

    func isStrictlyEqual(to text: String) -> Bool { isStrictlyEqual(to: .string(text)) }

    /// JavaScript's `==`, as `userCtx.name == oldDoc.name` uses it: `null` equals `undefined`,
    /// numbers and strings compare as numbers, and an array or object compares by its string form.
    func isLooselyEqual(to other: ScriptValue) -> Bool {
        switch (self, other) {
        case (.undefined, .undefined), (.undefined, .null), (.null, .undefined), (.null, .null): return true
        case (.undefined, _), (.null, _), (_, .undefined), (_, .null): return false
        case (.number(let a), .string(let b)): return a == Self.numberConversion(of: b)
        case (.string(let a), .number(let b)): return Self.numberConversion(of: a) == b
        case (.boolean(let a), _): return ScriptValue.number(a ? 1 : 0).isLooselyEqual(to: other)
        case (_, .boolean(let b)): return isLooselyEqual(to: .number(b ? 1 : 0))
        case (.array, .string), (.array, .number), (.object, .string), (.object, .number):
            return ScriptValue.string(stringConversion).isLooselyEqual(to: other)
        case (.string, .array), (.number, .array), (.string, .object), (.number, .object):
            return isLooselyEqual(to: .string(other.stringConversion))
        default: return isStrictlyEqual(to: other)
        }
    }

    /// `container.indexOf(value)`: an element search by `===` in an array, a substring search
    /// (of the value's string form) in a string; any other value has no `indexOf`.
    func indexOf(_ value: ScriptValue, describedAs description: String) throws -> Int {
        switch self {
        case .array(let elements):
            return elements.firstIndex { $0.isStrictlyEqual(to: value) } ?? -1
        case .string(let text):
            let haystack = Array(text.utf16), needle = Array(value.stringConversion.utf16)
            guard needle.count <= haystack.count else { return -1 }
            return (0...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) } ?? -1
        default:
            throw CBLError(500, "TypeError: \(description).indexOf is not a function")
        }
    }

    /// JavaScript's `String(value)`, as `+` concatenation applies it.
    var stringConversion: String {
        switch self {
        case .undefined: return "undefined"
        case .null: return "null"
        case .boolean(let flag): return flag ? "true" : "false"
        case .number(let number): return Self.numberText(number)
        case .string(let text): return text
        case .array(let elements):
            return elements.map { element -> String in
                switch element {
                case .undefined, .null: return ""
                default: return element.stringConversion
                }
            }.joined(separator: ",")
        case .object: return "[object Object]"
        }
    }

    /// `Array.prototype.sort()` without a comparator: by string form in UTF-16 order, stable,
    /// `undefined` last.
    static func sortedAsJavaScriptSorts(_ values: [ScriptValue]) -> [ScriptValue] {
        let keyed = values.enumerated().map { (index: $0.offset, key: Array($0.element.stringConversion.utf16), value: $0.element) }
        let defined = keyed.filter { if case .undefined = $0.value { return false } else { return true } }
        let undefinedCount = keyed.count - defined.count
        let sorted = defined.sorted { a, b in
            a.key.lexicographicallyPrecedes(b.key) || (a.key == b.key && a.index < b.index)
        }
        return sorted.map(\.value) + Array(repeating: .undefined, count: undefinedCount)
    }

    /// JavaScript's `Number(text)`: blank is 0, decimal and `0x`/`0o`/`0b` literals, `Infinity`;
    /// anything else NaN.
    private static func numberConversion(of text: String) -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return 0 }
        switch trimmed {
        case "Infinity", "+Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: break
        }
        let lowered = trimmed.lowercased()
        for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where lowered.hasPrefix(prefix) {
            let digits = lowered.dropFirst(2)
            guard !digits.isEmpty else { return .nan }
            var value = 0.0
            for digit in digits {
                guard let digitValue = digit.hexDigitValue, digitValue < radix else { return .nan }
                value = value * Double(radix) + Double(digitValue)
            }
            return value
        }
        guard trimmed.allSatisfy({ "0123456789+-.eE".contains($0) }), let value = Double(trimmed) else { return .nan }
        return value
    }

    /// JavaScript's `Number.prototype.toString()`: the shortest digits that read back as the
    /// number, in plain notation from 1e-6 up to 1e21 and in exponent notation outside.
    private static func numberText(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        if number == 0 { return "0" }
        let sign = number < 0 ? "-" : ""
        // Swift's description also gives the shortest round-trip digits; only the layout differs.
        let description = "\(abs(number))"
        let parts = description.lowercased().split(separator: "e", maxSplits: 1)
        let mantissa = parts[0]
        let exponent = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        let integerPart = mantissa.split(separator: ".", omittingEmptySubsequences: false)[0]
        var digits = Array(mantissa.filter { $0 != "." })
        // value = 0.DIGITS × 10^pointPosition
        var pointPosition = integerPart.count + exponent
        while digits.first == "0" { digits.removeFirst(); pointPosition -= 1 }
        while digits.last == "0" { digits.removeLast() }
        let digitText = String(digits), count = digits.count
        if count <= pointPosition && pointPosition <= 21 {
            return sign + digitText + String(repeating: "0", count: pointPosition - count)
        }
        if 0 < pointPosition && pointPosition <= 21 {
            return sign + String(digits[..<pointPosition]) + "." + String(digits[pointPosition...])
        }
        if -6 < pointPosition && pointPosition <= 0 {
            return sign + "0." + String(repeating: "0", count: -pointPosition) + digitText
        }
        let shown = pointPosition - 1
        let fraction = count > 1 ? "." + String(digits[1...]) : ""
        return sign + String(digits[0]) + fraction + "e" + (shown > 0 ? "+" : "-") + String(abs(shown))
    }
}

