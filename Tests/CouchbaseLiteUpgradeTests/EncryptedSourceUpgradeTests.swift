import CouchbaseLite
import Foundation
import SQLiteKit
import XCTest
@testable import CouchbaseLiteSwift
@testable import CouchbaseLiteUpgrade

/// An encrypted (SQLCipher) 1.x source converts when its key is given, and is refused without it.
final class EncryptedSourceUpgradeTests: XCTestCase {
    func testEncryptedSourceConvertsWithItsKey() throws {
        guard SQLiteLibrary.isSQLCipherAvailable else { throw XCTSkip("libsqlcipher0 is not installed") }
        let scratch = Scratch()
        let manager = try CBLManager(directory: scratch.path("v1").path)
        let options = CBLDatabaseOptions()
        options.create = true
        options.encryptionKey = "letmein"
        let db = try manager.openDatabaseNamed("seekrit", with: options)
        for i in 0..<25 { _ = try db.document(withID: "doc-\(i)")!.putProperties(["n": i, "secret": "s\(i)"]) }
        let bundle = scratch.path("v1/seekrit.cblite2")
        try db.close()
        let before = try checksums(bundle)

        XCTAssertThrowsError(try DatabaseUpgrader(source: bundle, destination: scratch.path("out/plain.cblite2")).run()) { error in
            let e = error as? CouchbaseLiteError
            XCTAssertEqual(e?.code, .notADatabaseFile, "\(error)")
            XCTAssertTrue(e?.message.contains("encrypted") == true, "\(error)")
        }
        var wrong = UpgradeOptions()
        wrong.encryptionKey = CBLSymmetricKey(password: "wrong")
        XCTAssertThrowsError(try DatabaseUpgrader(source: bundle, destination: scratch.path("out/wrong.cblite2"), options: wrong).run()) {
            XCTAssertTrue(($0 as? CouchbaseLiteError)?.message.contains("wrong encryption key") == true, "\($0)")
        }

        var upgrade = UpgradeOptions()
        upgrade.encryptionKey = CBLSymmetricKey(password: "letmein")
        let destination = scratch.path("out/seekrit.cblite2")
        let report = try DatabaseUpgrader(source: bundle, destination: destination, options: upgrade).run()
        XCTAssertEqual(report.documentsConverted, 25)
        XCTAssertEqual(try checksums(bundle), before, "source unchanged")
        let converted = try openConverted(destination)
        XCTAssertEqual(converted.count, 25)
        XCTAssertEqual(converted.document(withID: "doc-7")?.string(forKey: "secret"), "s7")
    }
}
