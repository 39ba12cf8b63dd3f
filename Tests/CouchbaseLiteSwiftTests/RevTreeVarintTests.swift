import Fleece
import XCTest
@testable import CouchbaseLiteSwift

/// The varints of the 2.x file format (a binary revision ID's generation, a rev-tree record's
/// sequence) are read with Fleece's `Varint`, which refuses one longer than 10 bytes or one that
/// overflows 64 bits, instead of reading garbage from it.
final class RevTreeVarintTests: XCTestCase {
    /// UInt64.max: nine 0xFF bytes, then the 64th bit.
    private static let largest: [UInt8] = Array(repeating: 0xFF, count: 9) + [0x01]
    /// Ten bytes whose last carries a 65th bit.
    private static let overflowing: [UInt8] = Array(repeating: 0xFF, count: 9) + [0x02]
    /// Eleven bytes: a zero padded with continuation bytes past the longest varint.
    private static let overlong: [UInt8] = Array(repeating: 0x80, count: 10) + [0x00]

    func testBinaryRevisionIDRefusesAnOverflowingGeneration() {
        XCTAssertEqual(BinaryRevisionID.decode(Self.largest + [0xAB]), "\(UInt64.max)-ab")
        XCTAssertEqual(BinaryRevisionID.generation(of: Self.largest + [0xAB]), UInt64.max)
        XCTAssertNil(BinaryRevisionID.decode(Self.overflowing + [0xAB]))
        XCTAssertNil(BinaryRevisionID.decode(Self.overlong + [0xAB]))
        XCTAssertEqual(BinaryRevisionID.generation(of: Self.overflowing + [0xAB]), 0)
        XCTAssertEqual(BinaryRevisionID.generation(of: Self.overlong + [0xAB]), 0)
    }

    /// One bodiless leaf `1-abcd` whose sequence is `sequence`, then the end marker.
    private func tree(sequence: [UInt8]) -> [UInt8] {
        let record: [UInt8] = [0xFF, 0xFF, RevisionFlags.leaf.rawValue, 3, 0x01, 0xAB, 0xCD] + sequence
        let size = UInt32(4 + record.count)
        return [UInt8(size >> 24), UInt8((size >> 16) & 0xFF), UInt8((size >> 8) & 0xFF), UInt8(size & 0xFF)] + record + [0, 0, 0, 0]
    }

    func testRevTreeRefusesAnOverflowingSequence() throws {
        XCTAssertEqual(try LiteCoreRevTree.decode(tree(sequence: [0x05])).current?.sequence, 5)
        XCTAssertEqual(try LiteCoreRevTree.decode(tree(sequence: Self.largest)).current?.sequence, UInt64.max)
        for bad in [Self.overflowing, Self.overlong, [0x80]] {
            XCTAssertThrowsError(try LiteCoreRevTree.decode(tree(sequence: bad)), "\(bad)") { error in
                XCTAssertEqual((error as? CouchbaseLiteError)?.code, CouchbaseLiteError.Code.corruptRevisionData)
            }
        }
    }

    func testWrittenVarintsReadBack() {
        for value: UInt64 in [0, 1, 127, 128, 300, 1 << 35, UInt64.max] {
            var bytes: [UInt8] = []
            Varint.append(value, to: &bytes)
            XCTAssertEqual(bytes.count, Varint.size(value))
            var offset = 0
            XCTAssertEqual(bytes.withUnsafeBytes { Varint.read($0, at: &offset) }, value)
            XCTAssertEqual(offset, bytes.count)
        }
    }
}
