import CouchbaseLite
import Crypto
import Foundation
import HummingbirdTLS
import NIOSSL
import SwiftASN1
import X509

/// A TLS server identity: a certificate chain and its private key, in PEM.
struct TLSIdentity: Sendable {
    let certificateChainPEM: String
    let privateKeyPEM: String

    init(certificateChainPEM: String, privateKeyPEM: String) {
        // One trailing newline, however the PEM was written or read back.
        self.certificateChainPEM = certificateChainPEM.trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
        self.privateKeyPEM = privateKeyPEM.trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
    }

    /// SHA-1 of the leaf certificate's DER encoding.
    var leafDigest: Data? {
        guard let leaf = try? Certificate(pemEncoded: certificateChainPEM) else { return nil }
        var serializer = DER.Serializer()
        guard (try? serializer.serialize(leaf)) != nil else { return nil }
        return Data(Insecure.SHA1.hash(data: serializer.serializedBytes))
    }

    /// The NIOSSL server configuration for this identity (validates both PEMs).
    func serverConfiguration() throws -> TLSConfiguration {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
        guard !chain.isEmpty else { throw CBLError(400, "The certificate chain PEM holds no certificate") }
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        return TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) },
                                                        privateKey: .privateKey(key))
    }

    /// A new self-signed P-256 identity for `label` (also valid for `localhost` and 127.0.0.1),
    /// valid for ten years, like 1.x's anonymous identity.
    static func makeSelfSigned(label: String) throws -> TLSIdentity {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName(label)
            OrganizationName("Couchbase Lite listener")
        }
        let now = Date()
        let extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
            try ExtendedKeyUsage([.serverAuth])
            SubjectAlternativeNames([
                .dnsName("localhost"),
                .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
            ])
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions,
            issuerPrivateKey: .init(key))
        return TLSIdentity(certificateChainPEM: try certificate.serializeAsPEM().pemString,
                           privateKeyPEM: key.pemRepresentation)
    }

    /// The anonymous identity stored under `label` in `directory` (so clients can pin it
    /// across restarts, as 1.x kept it in the keychain), created on first use.
    static func anonymous(label: String, directory: String) throws -> TLSIdentity {
        let safe = String(label.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) ? Character($0) : "_" })
        let folder = URL(fileURLWithPath: directory).appendingPathComponent(".listener-tls")
        let file = folder.appendingPathComponent("\(safe.isEmpty ? "default" : safe).pem")
        let fm = FileManager.default
        if let text = try? String(contentsOf: file, encoding: .utf8),
           let keyStart = text.range(of: "-----BEGIN PRIVATE KEY-----") {
            let identity = TLSIdentity(certificateChainPEM: String(text[..<keyStart.lowerBound]),
                                       privateKeyPEM: String(text[keyStart.lowerBound...]))
            if (try? identity.serverConfiguration()) != nil { return identity }
        }
        let identity = try makeSelfSigned(label: label)
        try fm.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let text = identity.certificateChainPEM + identity.privateKeyPEM
        guard fm.createFile(atPath: file.path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CBLError(500, "Cannot save the TLS identity at \(file.path)")
        }
        return identity
    }
}
