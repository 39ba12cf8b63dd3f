import CouchbaseLite
import Crypto
import Foundation
import XCTest

/// The replicator streams attachments out of and into encrypted blob stores (push: multipart
/// upload read through decryption; pull: the download written through encryption), against a
/// real listener on 127.0.0.1.
final class EncryptedAttachmentReplicationTests: ReplicationTestCase {
    private func content(_ count: Int, seed: UInt64) -> Data {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var out = Data(capacity: count)
        while out.count < count {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            withUnsafeBytes(of: state) { out.append(contentsOf: $0.prefix(min(8, count - out.count))) }
        }
        return out
    }

    func testLargeAttachmentsPushAndPullBetweenEncryptedDatabases() throws {
        let key = CBLSymmetricKey(password: "letmein")
        let big = content(4 * 1024 * 1024 + 3, seed: 11)
        let small = Data("a small encrypted attachment".utf8)
        let digest = "sha1-" + Data(Insecure.SHA1.hash(data: big)).base64EncodedString()

        let local = try clientManager.databaseNamed("local")
        try local.changeAttachmentEncryptionKey(to: key)
        let rev = local.document(withID: "doc")!.newRevision()
        rev["title"] = "big"
        rev.setAttachmentNamed("big.bin", withContentType: "application/octet-stream", content: big)
        rev.setAttachmentNamed("small.txt", withContentType: "text/plain", content: small)
        _ = try rev.save()
        XCTAssertTrue(local.attachmentsAreEncrypted)
        let rawLocal = try XCTUnwrap(local.attachmentBlobFileContents(digest: digest))
        XCTAssertNil(rawLocal.range(of: big.subdata(in: 1000..<1032)), "stored encrypted")

        _ = try createDB("server")
        let push = local.createPushReplication(remoteURL("server"))
        runToCompletion(push, timeout: 60)
        XCTAssertNil(push.lastError)
        let served = try manager.existingDatabaseNamed("server").document(withID: "doc")?.currentRevision
        XCTAssertEqual(served?.attachmentNamed("big.bin")?.content, big, "the listener got the plaintext")
        XCTAssertEqual(served?.attachmentNamed("big.bin")?.digest, digest)
        XCTAssertEqual(served?.attachmentNamed("small.txt")?.content, small)

        let mirror = try clientManager.databaseNamed("mirror")
        try mirror.changeAttachmentEncryptionKey(to: CBLSymmetricKey(password: "other"))
        let pull = mirror.createPullReplication(remoteURL("server"))
        runToCompletion(pull, timeout: 60)
        XCTAssertNil(pull.lastError)
        let pulled = mirror.document(withID: "doc")?.currentRevision
        XCTAssertEqual(pulled?.attachmentNamed("big.bin")?.content, big)
        XCTAssertEqual(pulled?.attachmentNamed("big.bin")?.digest, digest)
        XCTAssertEqual(pulled?.attachmentNamed("small.txt")?.content, small)
        let rawMirror = try XCTUnwrap(mirror.attachmentBlobFileContents(digest: digest))
        XCTAssertNil(rawMirror.range(of: big.subdata(in: 1000..<1032)), "written encrypted")
        XCTAssertNotEqual(rawMirror.prefix(64), rawLocal.prefix(64), "each store has its own key")
    }
}
