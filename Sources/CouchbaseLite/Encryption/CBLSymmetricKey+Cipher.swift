import Crypto
import Foundation
import _CryptoExtras

/// 1.x's `CBLCryptorBlock`: called with each piece of plaintext, then once with nil to finish;
/// returns the ciphertext produced so far (the first call's output starts with the IV), or nil
/// on failure.
public typealias CBLCryptorBlock = (Data?) -> Data?

/// Encryption in 1.x's `CBLSymmetricKey` format (couchbase-lite-ios 1.4 `CBLSymmetricKey.m`):
/// a random 16-byte IV, then the data encrypted with AES-256-CBC and PKCS#7 padding. Nothing
/// else: no header, MAC or checksum (the "Adler32 checksum" in 1.x's comment was never written).
/// Encrypted attachments are stored this way, so an encrypted 1.x blob store reads here as is.
extension CBLSymmetricKey {
    /// The AES block size, also the IV size (`kCCBlockSizeAES128`).
    static let blockSize = 16

    /// The data encrypted in 1.x's format (IV + AES-256-CBC/PKCS#7); nil only if encryption fails.
    public func encryptData(_ data: Data) -> Data? {
        try? encrypt(data)
    }

    /// The plaintext of data in 1.x's format; nil when it does not decrypt with this key (a
    /// wrong key fails the padding check almost always; callers that know the content's digest
    /// also compare it).
    public func decryptData(_ encryptedData: Data) -> Data? {
        try? decrypt(encryptedData)
    }

    /// A streaming encryptor (1.x `createEncryptor`): pass plaintext pieces, then nil to finish.
    public func createEncryptor() -> CBLCryptorBlock {
        let encryptor = CBCEncryptor(key: self)
        let lock = NSLock()
        return { input in
            lock.lock(); defer { lock.unlock() }
            if let input { return try? encryptor.update(input) }
            return try? encryptor.finish()
        }
    }

    /// A stream of the plaintext of an encrypted stream (1.x `decryptStream:`). A stream that
    /// does not decrypt (wrong key, truncated) reports an error instead of more bytes.
    public func decryptStream(_ encryptedStream: InputStream) -> InputStream {
        DecryptingInputStream(source: encryptedStream, key: self)
    }

    /// Throwing form of ``encryptData(_:)``.
    func encrypt(_ data: Data) throws -> Data {
        let encryptor = CBCEncryptor(key: self)
        var out = try encryptor.update(data)
        out.append(try encryptor.finish())
        return out
    }

    /// Throwing form of ``decryptData(_:)``: 401 when the data does not decrypt with this key.
    func decrypt(_ data: Data) throws -> Data {
        guard data.count >= 2 * Self.blockSize, (data.count - Self.blockSize) % Self.blockSize == 0 else {
            throw CBLSymmetricKey.cannotDecrypt
        }
        do {
            let iv = try AES._CBC.IV(ivBytes: data.prefix(Self.blockSize))
            return try AES._CBC.decrypt(data.dropFirst(Self.blockSize), using: symmetricKey, iv: iv)
        } catch {
            throw CBLSymmetricKey.cannotDecrypt
        }
    }

    var symmetricKey: SymmetricKey { SymmetricKey(data: keyData) }

    /// The error for data this key cannot decrypt: 401, as 1.x answers a wrong key.
    static let cannotDecrypt = CBLError.unauthorized(
        "Encrypted data does not decrypt with this key (wrong encryption key, or the data is damaged)")
}

/// Incremental AES-256-CBC encryption producing 1.x's format: the IV first, then each whole
/// block as soon as it is complete (chaining from the previous ciphertext block, which gives
/// exactly the bytes of a one-shot encryption), PKCS#7 padding at `finish`.
final class CBCEncryptor {
    private let key: SymmetricKey
    private var chain: [UInt8]
    private var pending = Data()
    private var wroteIV = false

    init(key: CBLSymmetricKey) {
        self.key = key.symmetricKey
        var iv = [UInt8](repeating: 0, count: CBLSymmetricKey.blockSize)
        var rng = SystemRandomNumberGenerator()
        for i in iv.indices { iv[i] = rng.next() }
        chain = iv
    }

    /// Ciphertext for the whole blocks now available (with the IV in front the first time).
    func update(_ data: Data) throws -> Data {
        pending.append(data)
        let whole = pending.count - pending.count % CBLSymmetricKey.blockSize
        var out = takeIV()
        guard whole > 0 else { return out }
        let encrypted = try AES._CBC.encrypt(pending.prefix(whole), using: key, iv: AES._CBC.IV(ivBytes: chain),
                                             noPadding: true)
        chain = Array(encrypted.suffix(CBLSymmetricKey.blockSize))
        pending = Data(pending.dropFirst(whole))
        out.append(encrypted)
        return out
    }

    /// The last block(s): the remaining bytes with PKCS#7 padding.
    func finish() throws -> Data {
        var out = takeIV()
        out.append(try AES._CBC.encrypt(pending, using: key, iv: AES._CBC.IV(ivBytes: chain)))
        pending = Data()
        return out
    }

    private func takeIV() -> Data {
        guard !wroteIV else { return Data() }
        wroteIV = true
        return Data(chain)
    }
}

/// Incremental decryption of 1.x's format. The last block is held back until `finish`, since
/// only it carries the padding.
final class CBCDecryptor {
    private let key: SymmetricKey
    private var chain: [UInt8]?
    private var pending = Data()

    init(key: CBLSymmetricKey) {
        self.key = key.symmetricKey
    }

    func update(_ data: Data) throws -> Data {
        pending.append(data)
        if chain == nil {
            guard pending.count >= CBLSymmetricKey.blockSize else { return Data() }
            chain = Array(pending.prefix(CBLSymmetricKey.blockSize))
            pending = Data(pending.dropFirst(CBLSymmetricKey.blockSize))
        }
        // Keep at least one whole block (the possibly-last one) for `finish`.
        let available = pending.count - 1
        guard available >= CBLSymmetricKey.blockSize else { return Data() }
        let whole = available - available % CBLSymmetricKey.blockSize
        let cipher = pending.prefix(whole)
        let plain: Data
        do {
            plain = try AES._CBC.decrypt(cipher, using: key, iv: AES._CBC.IV(ivBytes: chain!), noPadding: true)
        } catch {
            throw CBLSymmetricKey.cannotDecrypt
        }
        chain = Array(cipher.suffix(CBLSymmetricKey.blockSize))
        pending = Data(pending.dropFirst(whole))
        return plain
    }

    /// The last plaintext bytes; 401 when the input was not a whole number of blocks or the
    /// padding is wrong (a wrong key, almost always).
    func finish() throws -> Data {
        guard let chain, pending.count == CBLSymmetricKey.blockSize else { throw CBLSymmetricKey.cannotDecrypt }
        do {
            return try AES._CBC.decrypt(pending, using: key, iv: AES._CBC.IV(ivBytes: chain))
        } catch {
            throw CBLSymmetricKey.cannotDecrypt
        }
    }
}

/// The `InputStream` ``CBLSymmetricKey/decryptStream(_:)`` returns: decrypts as it is read. Not
/// `Sendable`, as Foundation's `InputStream` is not: read it on one thread at a time.
final class DecryptingInputStream: InputStream {
    private let source: InputStream
    private let decryptor: CBCDecryptor
    private var buffer = Data()
    private var atEnd = false
    private var failure: Error?
    private var status: Stream.Status = .notOpen

    init(source: InputStream, key: CBLSymmetricKey) {
        self.source = source
        self.decryptor = CBCDecryptor(key: key)
        super.init(data: Data())
    }

    override func open() {
        if source.streamStatus == .notOpen { source.open() }
        status = .open
    }

    override func close() {
        source.close()
        status = .closed
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: Error? { failure }
    override var hasBytesAvailable: Bool { !buffer.isEmpty || !atEnd }

    override func read(_ out: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        if failure != nil { return -1 }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while buffer.isEmpty && !atEnd {
            let n = source.read(&chunk, maxLength: chunk.count)
            do {
                if n > 0 {
                    buffer.append(try decryptor.update(Data(chunk[0..<n])))
                } else if n == 0 {
                    buffer.append(try decryptor.finish())
                    atEnd = true
                } else {
                    throw source.streamError ?? CBLError.dbError("Cannot read the encrypted stream")
                }
            } catch {
                failure = error
                status = .error
                return -1
            }
        }
        let count = min(len, buffer.count)
        if count == 0 {
            status = .atEnd
            return 0
        }
        buffer.copyBytes(to: out, count: count)
        buffer = Data(buffer.dropFirst(count))
        return count
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>,
                            length len: UnsafeMutablePointer<Int>) -> Bool { false }
}
