import CBLTestSupport
import XCTest
@testable import Fleece

/// The package's one LEB128 varint (`Varint`): what Fleece's validator and the 2.x file format read.
final class VarintTests: XCTestCase {
    private func read(_ bytes: [UInt8]) -> (value: UInt64, length: Int)? {
        bytes.withUnsafeBufferPointer { Varint.read($0.baseAddress!, at: 0, end: $0.count) }
    }

    func testRefusesTruncatedOverlongAndOverflowing() {
        XCTAssertEqual(read([0x05])?.value, 5)
        XCTAssertEqual(read([0xAC, 0x02])?.value, 300)
        XCTAssertEqual(read(Array(repeating: 0xFF, count: 9) + [0x01])?.value, UInt64.max)
        XCTAssertNil(read([0x80]), "truncated")
        XCTAssertNil(read(Array(repeating: 0xFF, count: 9) + [0x02]), "a 65th bit")
        XCTAssertNil(read(Array(repeating: 0xFF, count: 9) + [0x7F]), "bits past the 64th")
        XCTAssertNil(read(Array(repeating: 0x80, count: 10) + [0x00]), "longer than 10 bytes")
    }

    func testRawBufferFormAdvancesOnlyOnSuccess() {
        let bytes: [UInt8] = [0x00, 0xAC, 0x02, 0x80]
        var offset = 1
        XCTAssertEqual(bytes.withUnsafeBytes { Varint.read($0, at: &offset) }, 300)
        XCTAssertEqual(offset, 3)
        XCTAssertNil(bytes.withUnsafeBytes { Varint.read($0, at: &offset) })
        XCTAssertEqual(offset, 3)
        offset = 4
        XCTAssertNil(bytes.withUnsafeBytes { Varint.read($0, at: &offset) })
    }

    func testWriteAppendAndValidatedReadAgree() {
        var rng = SplitMix64(seed: 7)
        for i in 0..<2000 {
            let value = i < 64 ? (UInt64(1) << UInt64(i)) &- 1 : rng.next() >> (rng.next() % 64)
            var appended: [UInt8] = []
            Varint.append(value, to: &appended)
            var written = [UInt8](repeating: 0, count: Varint.maxLength)
            let n = written.withUnsafeMutableBufferPointer { Varint.write(value, to: $0.baseAddress!) }
            XCTAssertEqual(Array(written[..<n]), appended)
            XCTAssertEqual(n, Varint.size(value))
            XCTAssertEqual(read(appended)?.value, value)
            XCTAssertEqual(read(appended)?.length, n)
            if value <= UInt64(Int.max) {
                let validated = appended.withUnsafeBufferPointer { Varint.readValidated($0.baseAddress!, at: 0) }
                XCTAssertEqual(validated.value, Int(value))
                XCTAssertEqual(validated.next, n)
            }
        }
    }
}
