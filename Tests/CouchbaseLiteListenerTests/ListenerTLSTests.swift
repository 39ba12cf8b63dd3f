import CouchbaseLite
import CouchbaseLiteListener
import Foundation
import XCTest

/// HTTPS with 1.x's anonymous (self-signed) identity, checked by Python's TLS client against
/// the certificate the listener reports.
final class ListenerTLSTests: ListenerTestCase {
    private func fetch(_ url: String, caFile: String) throws -> (Int32, String) {
        let run = try runChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", """
            import ssl, sys, urllib.request
            ctx = ssl.create_default_context(cafile=sys.argv[1])
            print(urllib.request.urlopen(sys.argv[2], context=ctx, timeout=10).read().decode())
            """, caFile, url], timeout: 20)
        if run.timedOut { return (-1, "timed out") }
        return (run.status, run.output)
    }

    func testAnonymousIdentityServesHTTPS() throws {
        listener.stop()
        let secure = CBLListener(manager: manager, port: 0)
        secure.bindAddress = "127.0.0.1"
        XCTAssertNil(secure.sslCertificatePEM)
        try secure.setAnonymousSSLIdentityWithLabel("Test Listener")
        let pem = try XCTUnwrap(secure.sslCertificatePEM)
        XCTAssertEqual(secure.sslIdentityDigest?.count, 20)
        XCTAssertEqual(secure.SSLIdentityDigest, secure.sslIdentityDigest)
        XCTAssertTrue(pem.contains("-----BEGIN CERTIFICATE-----"))
        try secure.start()
        defer { secure.stop() }
        let url = try XCTUnwrap(secure.url)
        XCTAssertEqual(url.scheme, "https")
        XCTAssertEqual(secure.URL, url)

        let caFile = directory.appendingPathComponent("ca.pem")
        try pem.write(to: caFile, atomically: true, encoding: .utf8)
        let (status, output) = try fetch(url.absoluteString, caFile: caFile.path)
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("\"couchdb\":\"Welcome\""), output)
        let (byName, byNameOutput) = try fetch("https://localhost:\(secure.port)/_all_dbs", caFile: caFile.path)
        XCTAssertEqual(byName, 0, byNameOutput)

        // The digest is SHA-1 over the certificate's DER, as Python computes it.
        let digestCheck = Process()
        digestCheck.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        digestCheck.arguments = ["python3", "-c",
                                 "import hashlib,ssl,sys; print(hashlib.sha1(ssl.PEM_cert_to_DER_cert(open(sys.argv[1]).read())).hexdigest())",
                                 caFile.path]
        let pipe = Pipe()
        digestCheck.standardOutput = pipe
        try digestCheck.run()
        digestCheck.waitUntilExit()
        let pythonHex = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(secure.sslIdentityDigest?.map { String(format: "%02x", $0) }.joined(), pythonHex)

        // Plain HTTP on the TLS port gets no HTTP answer.
        let plain = try? RawHTTPClient(port: secure.port, timeout: 3).send("GET", "/")
        XCTAssertNotEqual(plain?.status, 200)

        // The same label gives the same certificate (kept in the manager directory); another label another one.
        let same = CBLListener(manager: manager, port: 0)
        try same.setAnonymousSSLIdentity(withLabel: "Test Listener")
        XCTAssertEqual(same.sslCertificatePEM, pem)
        XCTAssertEqual(same.sslIdentityDigest, secure.sslIdentityDigest)
        let other = CBLListener(manager: manager, port: 0)
        try other.setAnonymousSSLIdentity(withLabel: "Other")
        XCTAssertNotEqual(other.sslCertificatePEM, pem)

        // Bad PEMs are refused; nil goes back to HTTP.
        XCTAssertThrowsError(try other.setSSLIdentity(certificateChainPEM: "garbage", privateKeyPEM: "garbage"))
        try other.setSSLIdentity(certificateChainPEM: nil, privateKeyPEM: nil)
        XCTAssertNil(other.sslCertificatePEM)
    }
}
