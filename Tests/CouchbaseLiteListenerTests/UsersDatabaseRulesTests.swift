import CouchbaseLite
import Foundation
import XCTest
@testable import CouchbaseLiteListener

/// The `_users` database's rules and CouchDB's `password_regexp` setting. Expected messages are
/// CouchDB 3.4's: those of `test/elixir/test/users_db_test.exs` ("users db", "users password
/// requirements"); the others were checked against CouchDB's own `_design/_auth` function run
/// under node, and the password settings against Erlang/OTP 25's `erl_scan`, `erl_parse` and
/// `re:run/3` (as `couch_users_db:validate_password` calls them).
final class UsersDatabaseRulesTests: XCTestCase {
    // MARK: - Contexts and documents

    private let serverAdmin: [String: Any] = ["name": "jan", "roles": ["_admin"]]
    private let anonymous: [String: Any] = ["name": NSNull(), "roles": [String]()]
    private let joe: [String: Any] = ["name": "joe", "roles": [String]()]

    private func userDocument(_ name: String, roles: [Any]? = [], _ members: [String: Any] = [:]) -> [String: Any] {
        var document: [String: Any] = ["_id": "org.couchdb.user:" + name, "name": name, "type": "user"]
        if let roles { document["roles"] = roles }
        document.merge(members) { $1 }
        return document
    }

    /// The error `validate` throws, or nil when it accepts the document.
    private func refusal(_ newDoc: [String: Any], old oldDoc: [String: Any]?, by userCtx: [String: Any],
                         security secObj: [String: Any] = [:]) -> CBLError? {
        do {
            try UsersDatabaseRules.validate(newDoc: newDoc, oldDoc: oldDoc, userCtx: userCtx, secObj: secObj)
            return nil
        } catch let error as CBLError {
            return error
        } catch {
            XCTFail("not a CBLError: \(error)")
            return nil
        }
    }

    private func forbidden(_ message: String) -> CBLError { CBLError(403, message) }

    // MARK: - users_db_test.exs "users db"

    func testCouchDBsUsersDBTestRefusalsForAnAdmin() {
        let stored = userDocument("jchris@apache.org", ["foo": "bar"])
        XCTAssertNil(refusal(stored, old: stored, by: serverAdmin))
        XCTAssertEqual(refusal(stored.merging(["type": "not user"]) { $1 }, old: stored, by: serverAdmin),
                       forbidden("doc.type must be user"))
        XCTAssertEqual(refusal(stored.merging(["roles": "not an array"]) { $1 }, old: stored, by: serverAdmin),
                       forbidden("doc.roles must be an array"))
        XCTAssertEqual(refusal(stored.merging(["roles": [12]]) { $1 }, old: stored, by: serverAdmin),
                       forbidden("doc.roles can only contain strings"))
        XCTAssertEqual(refusal(userDocument("jchris@apache.org", roles: nil), old: stored, by: serverAdmin),
                       forbidden("doc.roles must exist"))
        XCTAssertEqual(refusal(userDocument("joe:erlang"), old: nil, by: serverAdmin),
                       forbidden("Character `:` is not allowed in usernames."))
    }

    // MARK: - Who may do what

    func testAnonymousMaySignUpWithoutRoles() {
        XCTAssertNil(refusal(userDocument("joe"), old: nil, by: anonymous))
        XCTAssertNil(refusal(userDocument("joe"), old: nil, by: ["roles": [String]()]), "a context without a name is anonymous too")
        XCTAssertEqual(refusal(userDocument("joe", roles: ["editor"]), old: nil, by: anonymous), forbidden("Only _admin may set roles"))
    }

    func testUserMayChangeOwnPasswordButNotOwnRoles() {
        let stored = userDocument("joe", roles: ["reader", "writer"])
        let newPassword = userDocument("joe", roles: ["writer", "reader"], [
            "password_scheme": "pbkdf2", "pbkdf2_prf": "sha256", "salt": "00ff", "iterations": 10, "derived_key": "abcd",
        ])
        XCTAssertNil(refusal(newPassword, old: stored, by: joe), "roles compare as sorted lists")
        XCTAssertEqual(refusal(userDocument("joe", roles: ["reader"]), old: stored, by: joe), forbidden("Only _admin may edit roles"))
        XCTAssertEqual(refusal(userDocument("joe", roles: ["reader", "admin"]), old: stored, by: joe), forbidden("Only _admin may edit roles"))
        XCTAssertNil(refusal(userDocument("joe"), old: ["_id": "org.couchdb.user:joe", "name": "joe", "type": "user"], by: joe),
                     "an old document without roles has none")
    }

    func testUserMayNotEditAnotherUsersDocument() {
        let bob = userDocument("bob")
        XCTAssertEqual(refusal(bob.merging(["foo": 1]) { $1 }, old: bob, by: joe), forbidden("You may only update your own user document."))
        XCTAssertEqual(refusal(bob, old: bob, by: anonymous), forbidden("You may only update your own user document."))
    }

    func testServerAdminMayDoWhatTheRulesAllow() {
        let bob = userDocument("bob")
        XCTAssertNil(refusal(userDocument("bob", roles: ["editor", "_metrics"]), old: bob, by: serverAdmin))
        XCTAssertNil(refusal(userDocument("carol", roles: ["editor"]), old: nil, by: serverAdmin))
        XCTAssertEqual(refusal(userDocument("bob", roles: ["_admin"]), old: bob, by: serverAdmin),
                       forbidden("No system roles (starting with underscore) in users db."))
        XCTAssertEqual(refusal(userDocument("bob"), old: userDocument("robert"), by: serverAdmin), forbidden("Usernames can not be changed."))
        XCTAssertEqual(refusal(userDocument("_bob"), old: nil, by: serverAdmin), forbidden("Username may not start with underscore."))
    }

    func testDatabaseAdminsByNameOrRoleMaySetRoles() {
        let byName: [String: Any] = ["admins": ["names": ["joe"], "roles": [String]()]]
        XCTAssertNil(refusal(userDocument("bob", roles: ["editor"]), old: userDocument("bob"), by: joe, security: byName))
        let boss: [String: Any] = ["name": "ann", "roles": ["boss"]]
        XCTAssertNil(refusal(userDocument("bob", roles: ["editor"]), old: nil, by: boss, security: ["admins": ["roles": ["boss"]]]))
        XCTAssertEqual(refusal(userDocument("bob", roles: ["editor"]), old: nil, by: boss, security: ["members": ["roles": ["boss"]]]),
                       forbidden("Only _admin may set roles"), "members are not admins")
    }

    func testDeletions() {
        let deletion: [String: Any] = ["_id": "org.couchdb.user:bob", "_rev": "1-abc", "_deleted": true]
        XCTAssertNil(refusal(deletion, old: userDocument("bob"), by: serverAdmin))
        XCTAssertNil(refusal(deletion, old: userDocument("bob"), by: ["name": "bob", "roles": [String]()]))
        XCTAssertEqual(refusal(deletion, old: userDocument("bob"), by: joe), forbidden("Only admins may delete other user docs."))
        // Only a server admin: a database admin may edit other users but not delete them.
        XCTAssertEqual(refusal(deletion, old: userDocument("bob"), by: joe, security: ["admins": ["names": ["joe"]]]),
                       forbidden("Only admins may delete other user docs."))
        // A deletion is checked for nothing else: no type, no name.
        XCTAssertNil(refusal(deletion, old: ["_id": "org.couchdb.user:bob", "type": "user"], by: anonymous),
                     "null == undefined in CouchDB's loose comparison")
        // CouchDB's function reads oldDoc.name of null: a JavaScript error, answered 500.
        XCTAssertEqual(refusal(deletion, old: nil, by: joe)?.code, 500)
        XCTAssertNil(refusal(deletion, old: nil, by: serverAdmin))
    }

    // MARK: - Every other rule, in order

    func testFieldRulesAndMessages() {
        XCTAssertEqual(refusal(["_id": "org.couchdb.user:", "type": "user", "roles": [String]()], old: nil, by: serverAdmin),
                       forbidden("doc.name is required"))
        XCTAssertEqual(refusal(userDocument("", roles: []), old: nil, by: serverAdmin), forbidden("doc.name is required"))
        XCTAssertEqual(refusal(userDocument("bob", roles: nil, ["type": "admin"]), old: nil, by: serverAdmin),
                       forbidden("doc.type must be user"), "type is checked before roles")
        XCTAssertEqual(refusal(userDocument("bob").merging(["_id": "bob"]) { $1 }, old: nil, by: serverAdmin),
                       forbidden("Doc ID must be of the form org.couchdb.user:name"))
        XCTAssertEqual(refusal(userDocument("bob", ["password_sha": "da39a3ee"]), old: nil, by: serverAdmin),
                       forbidden("Users with password_sha must have a salt.See /_utils/script/couch.js for example code."))
        XCTAssertNil(refusal(userDocument("bob", ["password_sha": "da39a3ee", "salt": "ab", "password_scheme": "simple"]), old: nil, by: serverAdmin))
        XCTAssertEqual(refusal(userDocument("bob", ["password_scheme": "bcrypt"]), old: nil, by: serverAdmin),
                       forbidden("Password scheme `bcrypt` not supported."))
        XCTAssertEqual(refusal(userDocument("bob", ["password_scheme": 1.25]), old: nil, by: serverAdmin),
                       forbidden("Password scheme `1.25` not supported."))
        XCTAssertEqual(refusal(userDocument("bob", ["password_scheme": "pbkdf2", "iterations": "10", "derived_key": "k"]), old: nil, by: serverAdmin),
                       forbidden("iterations must be a number."))
        XCTAssertEqual(refusal(userDocument("bob", ["password_scheme": "pbkdf2", "iterations": 10]), old: nil, by: serverAdmin),
                       forbidden("derived_key must be a string."))
        XCTAssertNil(refusal(userDocument("bob", roles: ["_metrics"]), old: nil, by: serverAdmin), "_metrics is the allowed system role")
        XCTAssertEqual(refusal(userDocument("_bob", roles: ["_x"]), old: nil, by: serverAdmin),
                       forbidden("No system roles (starting with underscore) in users db."), "roles are checked before the name")
        XCTAssertEqual(refusal(userDocument("_a:b"), old: nil, by: serverAdmin), forbidden("Username may not start with underscore."))
        XCTAssertNil(refusal(userDocument("bob", roles: ["a:b"]), old: nil, by: serverAdmin), "a colon in a role is fine")
    }

    /// Values as JSONSerialization and CouchDB's JavaScript see them: a boolean is not the number
    /// 1, a number is falsy only as 0, `"org.couchdb.user:" + name` converts a non-string name.
    func testRulesFollowJavaScriptValues() throws {
        let parsed = { (json: String) throws -> [String: Any] in
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        }
        let notDeleted = try parsed(#"{"_id":"org.couchdb.user:bob","_deleted":1,"type":"user","name":"bob","roles":[]}"#)
        XCTAssertNil(refusal(notDeleted, old: nil, by: anonymous), "_deleted must be true itself")
        let zeroRoles = try parsed(#"{"_id":"org.couchdb.user:bob","type":"user","name":"bob","roles":0}"#)
        XCTAssertEqual(refusal(zeroRoles, old: nil, by: serverAdmin), forbidden("doc.roles must exist"))
        let trueName = try parsed(#"{"_id":"org.couchdb.user:true","type":"user","name":true,"roles":[]}"#)
        XCTAssertEqual(refusal(trueName, old: nil, by: serverAdmin)?.code, 500, "true.indexOf is not a function in CouchDB")
        let listName = try parsed(#"{"_id":"org.couchdb.user:ab","type":"user","name":["ab"],"roles":[]}"#)
        XCTAssertNil(refusal(listName, old: nil, by: serverAdmin), "CouchDB's function accepts a one-string list as a name")
        let wrongScheme = try parsed(#"{"_id":"org.couchdb.user:bob","type":"user","name":"bob","roles":[],"password_scheme":["a",null,1e21]}"#)
        XCTAssertEqual(refusal(wrongScheme, old: nil, by: serverAdmin), forbidden("Password scheme `a,,1e+21` not supported."))
    }

    func testDesignDocumentSourceStatesTheSameRules() {
        let source = UsersDatabaseRules.designDocumentSource
        XCTAssertTrue(source.hasPrefix("function (newDoc, oldDoc, userCtx, secObj) {"))
        for message in [
            "Only admins may delete other user docs.", "doc.type must be user", "doc.name is required", "doc.roles must exist",
            "doc.roles must be an array", "doc.roles can only contain strings", "Doc ID must be of the form org.couchdb.user:name",
            "Usernames can not be changed.", "Users with password_sha must have a salt.", "See /_utils/script/couch.js for example code.",
            "not supported.", "iterations must be a number.", "derived_key must be a string.",
            "You may only update your own user document.", "Only _admin may edit roles", "Only _admin may set roles",
            "No system roles (starting with underscore) in users db.", "Username may not start with underscore.",
            "Character `:` is not allowed in usernames.",
        ] {
            XCTAssertTrue(source.contains(message), message)
        }
    }

    // MARK: - password_regexp

    private func passwordRefusal(_ setting: String, _ password: String) -> CBLError? {
        do {
            try PasswordRequirements(setting: setting).check(password)
            return nil
        } catch {
            return error as? CBLError
        }
    }

    private let nonConforming = CBLError(400, "Password does not conform to requirements.")
    private let cannotHash = CBLError(403, "Server cannot hash passwords at this time.")

    /// users_db_test.exs "users password requirements", the setting as Elixir writes it.
    func testCouchDBsPasswordRequirementsTest() {
        let setting = #"[{".{10,}"}, {"[A-Z]+", "Requirement 2."}, {"[a-z]+", ""}, {"\\d+", "Req 4."}, "[!\.,\(\)]+"]"#
        XCTAssertEqual(PasswordRequirements(setting: setting).requirements?.map(\.pattern), [".{10,}", "[A-Z]+", "[a-z]+", #"\d+"#, "[!.,()]+"])
        XCTAssertEqual(passwordRefusal(setting, "funnybone"), nonConforming)
        XCTAssertEqual(passwordRefusal(setting, "funnnnnybone"), CBLError(400, "Password does not conform to requirements. Requirement 2."))
        XCTAssertEqual(passwordRefusal(setting, "FUNNNNNYBONE"), nonConforming)
        XCTAssertEqual(passwordRefusal(setting, "funnnnnyBONE"), CBLError(400, "Password does not conform to requirements. Req 4."))
        XCTAssertEqual(passwordRefusal(setting, "funnnnnyB0N3"), nonConforming)
        XCTAssertNil(passwordRefusal(setting, "funnnnnyB0N3!"))
        XCTAssertEqual(passwordRefusal(#"{{".{10,}"}}"#, "querty"), cannotHash, "not a list")
        XCTAssertEqual(passwordRefusal(#"[{".{10,}"]"#, "querty"), cannotHash, "does not parse")
    }

    func testSettingsWithoutRequirements() {
        for setting in ["", "[]", " [ ]\n", "[] % none yet\n", "[]. % the text's own full stop"] {
            XCTAssertEqual(PasswordRequirements(setting: setting).requirements, [], setting)
            XCTAssertNil(passwordRefusal(setting, "x"), setting)
        }
        // CouchDB appends "." to the text: a comment on the last line swallows it.
        XCTAssertEqual(passwordRefusal("[] % none yet", "x"), cannotHash)
    }

    func testRequirementShapes() {
        let setting = #"[{"a", reason}, {"b", []}, {"c", "Needs " "c."}]"#
        XCTAssertEqual(passwordRefusal(setting, "x"), nonConforming, "an atom is no reason")
        XCTAssertEqual(passwordRefusal(setting, "a"), nonConforming, "an empty reason is none")
        XCTAssertEqual(passwordRefusal(setting, "ab"), CBLError(400, "Password does not conform to requirements. Needs c."))
        XCTAssertNil(passwordRefusal(setting, "abc"))
        // An element of another shape fails only once the check reaches it, as in CouchDB.
        XCTAssertEqual(passwordRefusal(#"["a", 5, "b"]"#, "x"), nonConforming)
        XCTAssertEqual(passwordRefusal(#"["a", 5, "b"]"#, "a"), cannotHash)
        XCTAssertEqual(passwordRefusal(#"[{"a", "b", "c"}]"#, "a"), cannotHash)
        XCTAssertEqual(passwordRefusal(#"["("]"#, "a"), cannotHash, "a pattern Erlang's re refuses")
        // Strings are lists of characters: [$a, 98] is "ab".
        XCTAssertNil(passwordRefusal(#"[[$a, 98], {[$c | "d"]}]"#, "abcd"))
        XCTAssertEqual(passwordRefusal(#"[[$a, 98], {[$c | "d"]}]"#, "abd"), nonConforming)
        XCTAssertEqual(passwordRefusal(#"["a" | b]"#, "a"), cannotHash, "an improper list fails at its tail")
    }

    func testErlangStringEscapes() {
        XCTAssertEqual(ErlangTermReader.term(of: Array(#""\x41\x{42}\103\^a\s\d\e\t\.\\""#.utf8)),
                       .list([65, 66, 67, 1, 32, 127, 27, 9, 46, 92].map(ErlangTerm.integer)))
        XCTAssertEqual(ErlangTermReader.term(of: Array("{16#ff, -3, 1_000, 'quoted atom', 2.5}".utf8)),
                       .tuple([.integer(255), .integer(-3), .integer(1000), .atom("quoted atom"), .float(2.5)]))
        XCTAssertNil(ErlangTermReader.term(of: Array("[X]".utf8)), "a variable is not a term")
        XCTAssertNil(ErlangTermReader.term(of: Array("[end]".utf8)), "a reserved word is not an atom")
        XCTAssertNil(ErlangTermReader.term(of: Array(#"["a]"#.utf8)))
        // "\d" in the setting is DEL; a digit class needs "\\d".
        XCTAssertEqual(passwordRefusal(#"["\d"]"#, "123"), nonConforming)
        XCTAssertNil(passwordRefusal(#"["\\d"]"#, "123"))
    }

    /// Erlang's `re` matches the password's UTF-8 bytes with Latin-1 character tables.
    func testPatternsMatchBytesAsErlangsRe() {
        XCTAssertNil(passwordRefusal(#"[".{4,}"]"#, "éé"), "two characters, four bytes")
        XCTAssertEqual(passwordRefusal(#"[".{4,}"]"#, "éa"), nonConforming)
        XCTAssertNil(passwordRefusal(#"["\\w"]"#, "é"), "byte C3 is Ã, a Latin-1 letter")
        XCTAssertEqual(passwordRefusal(#"["\\d"]"#, "٣"), nonConforming, "\\d is ASCII")
        XCTAssertNil(passwordRefusal(#"["[[:punct:]]"]"#, "a$"), "POSIX punct includes symbols")
        XCTAssertNil(passwordRefusal(#"["^.$"]"#, "\r"), ". takes every byte but \\n")
        XCTAssertNil(passwordRefusal(#"["a{", "[]x]", "[a&&b]"]"#, "a{]&"), "literal braces and brackets as PCRE reads them")
        XCTAssertEqual(passwordRefusal(#"["\\x{100}"]"#, "a"), cannotHash, "no character above 0xFF without Unicode mode")
    }
}
