import Crypto
import Foundation
import XCTest
@testable import CouchbaseLite

/// The revision-ID digest input (spec 3.3), checked against an independently built MD5.
final class RevisionIDDigestTests: XCTestCase {
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
