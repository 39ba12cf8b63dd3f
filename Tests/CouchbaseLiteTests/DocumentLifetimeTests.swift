import CouchbaseLite
import Foundation
import XCTest

/// The document identity map must not keep documents alive: `document(withID:)` promises one
/// object per ID *while it is referenced*, and an app reading many documents must not keep them all.
final class DocumentLifetimeTests: XCTestCase {
    func testUnreferencedDocumentsAreReleased() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cbl-lifetime-\(UUID().uuidString)")
        let manager = try CBLManager(directory: root.path)
        defer {
            manager.close()
            try? FileManager.default.removeItem(at: root)
        }
        let db = try manager.databaseNamed("lifetime")

        weak var saved: CBLDocument?
        weak var read: CBLDocument?
        weak var neverLoaded: CBLDocument?
        do {
            let doc = db.document(withID: "saved")!
            try doc.putProperties(["a": 1])
            saved = doc
            neverLoaded = db.document(withID: "untouched")
        }
        do {
            let doc = db.existingDocument(withID: "saved")
            XCTAssertNotNil(doc)
        }
        try db.document(withID: "other")!.putProperties(["b": 2])
        do {
            let doc = db.existingDocument(withID: "other")!
            _ = doc.properties
            read = doc
        }

        XCTAssertNil(neverLoaded, "a document whose revision was never loaded stays alive")
        // A document's cached current revision must not keep the document alive.
        XCTAssertNil(saved, "a saved document is released when the app drops it")
        XCTAssertNil(read, "a read document is released when the app drops it")
    }
}
