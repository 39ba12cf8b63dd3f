import ArgumentParser
import CouchbaseLite
import Foundation

/// The key of an encrypted (SQLCipher) 1.x database, shared by every `cbl` command that opens one:
/// `--password` or `--key-file`, turned into the `CBLSymmetricKey` 1.x derives or uses as is.
struct EncryptionKeyOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The password of an encrypted 1.x database (the key is derived as 1.x derives it).", valueName: "password"))
    var password: String?

    @Option(help: ArgumentHelp("""
        A file holding the key of an encrypted 1.x database: exactly 32 bytes are the raw AES-256 key; \
        64 hex digits (a trailing newline allowed) are the raw key in hex; anything else is a password \
        (one trailing newline removed).
        """, valueName: "file"))
    var keyFile: String?

    func validate() throws {
        if password != nil && keyFile != nil { throw ValidationError("Give --password or --key-file, not both") }
    }

    /// The key, or nil when neither option was given.
    func key() throws -> CBLSymmetricKey? {
        if let password { return CBLSymmetricKey(password: password) }
        guard let keyFile else { return nil }
        return try Self.key(fromFile: keyFile)
    }

    /// A key file's key (see `--key-file`'s help for the three forms).
    static func key(fromFile path: String) throws -> CBLSymmetricKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read the key file \(path)")
        }
        if data.count == 32, let key = CBLSymmetricKey(keyData: data) { return key }
        var text = String(decoding: data, as: UTF8.self)
        if text.hasSuffix("\r\n") { text.removeLast(1) } else if text.hasSuffix("\n") { text.removeLast() }
        if text.hasSuffix("\r") { text.removeLast() }
        if text.count == 64, let raw = hexBytes(text), let key = CBLSymmetricKey(keyData: Data(raw)) { return key }
        guard !text.isEmpty else { throw CommandFailure("the key file \(path) is empty") }
        return CBLSymmetricKey(password: text)
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next() {
            guard let low = iterator.next(), let h = hexValue(high), let l = hexValue(low) else { return nil }
            out.append(h << 4 | l)
        }
        return out
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
