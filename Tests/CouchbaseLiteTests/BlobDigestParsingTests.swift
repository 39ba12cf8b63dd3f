import CBLTestSupport
import CouchbaseLiteSwift
import Foundation
import XCTest
@testable import CouchbaseLite

/// The 1.x `BlobKey(digest:)` and the 2.x `BlobStore.key(fromDigest:)` share one parser
/// (`SHA1BlobDigest`): both must answer every input as each did before, which was the same rule
/// written twice (a `sha1-` prefix, then what `Data(base64Encoded:)` reads, then exactly 20 bytes).
final class BlobDigestParsingTests: XCTestCase {
    /// The rule as both sides spelled it before they shared it.
    private static func referenceKey(_ digest: String) -> [UInt8]? {
        guard digest.hasPrefix("sha1-"), let data = Data(base64Encoded: String(digest.dropFirst(5))), data.count == 20 else {
            return nil
        }
        return Array(data)
    }

    private func assertSameAnswers(_ digest: String, file: StaticString = #filePath, line: UInt = #line) {
        let expected = Self.referenceKey(digest)
        XCTAssertEqual(BlobKey(digest: digest)?.bytes, expected, "1.x: \(digest.debugDescription)", file: file, line: line)
        XCTAssertEqual(CouchbaseLiteSwift.BlobStore.key(fromDigest: digest), expected, "2.x: \(digest.debugDescription)",
                       file: file, line: line)
    }

    func testKnownDigests() {
        let key = Array(0..<20).map(UInt8.init)
        let digest = "sha1-" + Data(key).base64EncodedString()
        XCTAssertEqual(BlobKey(digest: digest)?.bytes, key)
        XCTAssertEqual(CouchbaseLiteSwift.BlobStore.key(fromDigest: digest), key)
        XCTAssertEqual(BlobKey(bytes: key)?.digest, digest)
        XCTAssertEqual(CouchbaseLiteSwift.BlobStore.digest(forKey: key), digest)
        for input in [
            digest, "sha1-P1i5kI/sosq745/9BDR7kEghKps=", "sha1-P1i5kI/sosq745/9BDR7kEghKps", "sha1-P1i5kI_sosq745_9BDR7kEghKps=",
            "SHA1-P1i5kI/sosq745/9BDR7kEghKps=", "md5-rL0Y20zC+Fzt72VPzMSk2A==", "sha1-", "sha1", "", "sha1-=",
            "sha1-" + Data(key.dropLast()).base64EncodedString(), "sha1-" + Data(key + [0]).base64EncodedString(),
            "sha1- P1i5kI/sosq745/9BDR7kEghKps=", "sha1-P1i5kI/sosq745/9BDR7kEghKps= ", "sha1-P1i5kI/sosq745/9BDR7kEghKps==",
            "sha1-\u{301}P1i5kI/sosq745/9BDR7kEghKps=", "sha1\u{301}-P1i5kI/sosq745/9BDR7kEghKps=", "sha1-P1i5kI/sosq745/9BDR7kEghKpé",
        ] {
            assertSameAnswers(input)
        }
    }

    func testRandomDigests() {
        var rng = SplitMix64(seed: 32)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_- \n\u{301}é")
        for _ in 0..<3000 {
            var text: String
            switch rng.next() % 3 {
            case 0:   // a well-formed digest of a random length near 20 bytes
                let bytes = (0..<(17 + Int(rng.next() % 7))).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                text = "sha1-" + Data(bytes).base64EncodedString()
            case 1:   // 28 characters from the Base64 alphabet and a few others
                text = "sha1-" + String((0..<28).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
            default:  // a well-formed digest with one character changed
                let bytes = (0..<20).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                var characters = Array("sha1-" + Data(bytes).base64EncodedString())
                characters[Int(rng.next() % UInt64(characters.count))] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                text = String(characters)
            }
            assertSameAnswers(text)
        }
    }
}
