import Crypto
import Foundation
import XCTest
@testable import CouchbaseLite

/// The MD5 used for revision IDs against RFC 1321's test suite and swift-crypto.
final class MD5Tests: XCTestCase {
    private func hexDigest(_ parts: [[UInt8]]) -> String {
        var md5 = MD5()
        for part in parts { part.withUnsafeBytes { md5.update($0) } }
        var out: [UInt8] = []
        MD5.bytes(of: md5.finalize()) { out = Array($0) }
        return hex(out)
    }

    func testRFC1321Vectors() {
        let vectors: [(String, String)] = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            ("12345678901234567890123456789012345678901234567890123456789012345678901234567890",
             "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (input, expected) in vectors {
            XCTAssertEqual(hexDigest([Array(input.utf8)]), expected, input)
        }
    }

    /// Every length around the block and padding boundaries, fed whole and in uneven pieces.
    func testMatchesSwiftCrypto() {
        var rng = SystemRandomNumberGenerator()
        for length in 0...300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let expected = hex(Insecure.MD5.hash(data: bytes))
            XCTAssertEqual(hexDigest([bytes]), expected, "length \(length)")
            let cut1 = length / 3, cut2 = length - length / 5
            XCTAssertEqual(hexDigest([Array(bytes[..<cut1]), Array(bytes[cut1..<cut2]), Array(bytes[cut2...])]), expected,
                           "length \(length) in pieces")
            XCTAssertEqual(hexDigest(bytes.map { [$0] }), expected, "length \(length) byte by byte")
        }
    }

    /// Rev IDs with a parent hash `[len(parent) parent] deleted json` (spec 3.3), checked against swift-crypto.
    func testGeneratedRevisionIDsMatchSwiftCrypto() throws {
        let json = Array(#"{"a":1}"#.utf8)
        for parent in [nil, "1-abc", "12-" + String(repeating: "f", count: 32), "3-" + String(repeating: "x", count: 300)] as [String?] {
            for deleted in [false, true] {
                var reference = Insecure.MD5()
                if let parent {
                    let bytes = Array(parent.utf8)
                    reference.update(data: [UInt8(truncatingIfNeeded: bytes.count)])
                    reference.update(data: bytes)
                }
                reference.update(data: [deleted ? 1 : 0])
                reference.update(data: json)
                let generation = parent.map { RevisionID.generation($0) + 1 } ?? 1
                XCTAssertEqual(try RevisionID.generate(json: json, deleted: deleted, parent: parent),
                               "\(generation)-" + hex(reference.finalize()))
            }
        }
    }
}
