import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// Codable models (3.2.3): `save(from:)`, `document(id:as:)`, `delete(for:)`, `purge(for:)`,
/// `@DocumentID`, and decoding query rows; what the document body holds after encoding.
final class CodableModelTests: XCTestCase {
    private var directory: URL!
    private var db: Database!
    private var hotels: CouchbaseLiteSwift.Collection!

    override func setUpWithError() throws {
        directory = try QueryTestSupport.temporaryDirectory()
        db = try CollectionTestSupport.open("codable", in: directory)
        hotels = try db.createCollection(name: "hotels", scope: "travel")
    }

    override func tearDownWithError() throws {
        try? db?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    // MARK: Models

    struct Address: Codable, Equatable {
        var street: String
        var city: String
        var postcode: String?
    }

    struct Review: Codable, Equatable {
        var author: String
        var rating: Int
    }

    enum Category: String, Codable {
        case budget, boutique, resort
    }

    final class Hotel: Codable {
        @DocumentID var id: String?
        var name: String
        var opened: Date
        var address: Address
        var reviews: [Review]
        var tags: [String]
        var rating: Double
        var rooms: Int
        var petsAllowed: Bool
        var category: Category
        var phone: String?
        var nickname: String?
        var logo: Data?
        var brochure: Blob?
        var website: URL?
        var scores: [String: Int]
        var corrections: [Int?]

        init(name: String) {
            self.name = name
            opened = Date(timeIntervalSince1970: 1_600_000_000.125)
            address = Address(street: "1 Quay", city: "Bristol", postcode: nil)
            reviews = [Review(author: "ann", rating: 5), Review(author: "bob", rating: 3)]
            tags = ["harbour", "quiet"]
            rating = 4.5
            rooms = 42
            petsAllowed = true
            category = .boutique
            scores = ["clean": 9, "staff": 8]
            corrections = [1, nil, 3]
        }
    }

    final class Note: Codable {
        @DocumentID var id: String?
        var text: String
        init(id: String? = nil, text: String) {
            self.text = text
            self.id = id
        }
    }

    final class NoID: Codable {
        var text = "x"
    }

    // MARK: Round trips

    func testSaveGeneratesAndAssignsIDAndRevision() throws {
        let hotel = Hotel(name: "Harbour Inn")
        XCTAssertNil(hotel.id)
        try hotels.save(from: hotel)
        let id = try XCTUnwrap(hotel.id)
        XCTAssertTrue(id.hasPrefix("-"), "generated IDs look like Couchbase Lite's: \(id)")
        let stored = try XCTUnwrap(hotels.document(id: id))
        XCTAssertEqual(hotel.$id.revisionID, stored.revisionID)
        XCTAssertEqual(hotels.count, 1)

        // Saving again updates the same document.
        hotel.rooms = 43
        try hotels.save(from: hotel)
        XCTAssertEqual(hotel.id, id)
        XCTAssertEqual(hotels.count, 1)
        XCTAssertEqual(try hotels.document(id: id)?.int(forKey: "rooms"), 43)
        XCTAssertTrue(hotel.$id.revisionID?.hasPrefix("2-") == true, "\(hotel.$id.revisionID ?? "nil")")
    }

    func testDocumentBodyHoldsTwoXValues() throws {
        let hotel = Hotel(name: "Harbour Inn")
        hotel.logo = Data([0, 1, 2, 255])
        hotel.brochure = Blob(contentType: "text/plain", data: Data("welcome".utf8))
        hotel.website = URL(string: "https://example.com/inn")
        try hotels.save(from: hotel)

        let doc = try XCTUnwrap(hotels.document(id: hotel.id!))
        XCTAssertFalse(doc.contains(key: "id"), "the @DocumentID is the document's ID, not a property")
        XCTAssertEqual(doc.string(forKey: "opened"), "2020-09-13T12:26:40.125Z")
        XCTAssertEqual(doc.date(forKey: "opened"), hotel.opened)
        XCTAssertEqual(doc.dictionary(forKey: "address")?.string(forKey: "city"), "Bristol")
        XCTAssertFalse(doc.dictionary(forKey: "address")!.contains(key: "postcode"), "nil optionals are left out")
        XCTAssertFalse(doc.contains(key: "phone"))
        XCTAssertEqual(doc.array(forKey: "reviews")?.dictionary(at: 1)?.int(forKey: "rating"), 3)
        XCTAssertEqual(doc.array(forKey: "tags")?.toArray() as? [String], ["harbour", "quiet"])
        XCTAssertEqual(doc.double(forKey: "rating"), 4.5)
        XCTAssertEqual(doc.value(forKey: "rooms") as? Int, 42)
        XCTAssertEqual(doc.value(forKey: "petsAllowed") as? Bool, true)
        XCTAssertEqual(doc.string(forKey: "category"), "boutique")
        XCTAssertEqual(doc.value(forKey: "logo") as? Data, Data([0, 1, 2, 255]))
        XCTAssertEqual(doc.blob(forKey: "brochure")?.content, Data("welcome".utf8))
        XCTAssertEqual(doc.blob(forKey: "brochure")?.contentType, "text/plain")
        XCTAssertEqual(doc.string(forKey: "website"), "https://example.com/inn")
        XCTAssertEqual(doc.dictionary(forKey: "scores")?.int(forKey: "staff"), 8)
        XCTAssertTrue(doc.array(forKey: "corrections")?.value(at: 1) is NSNull)
        // The revision is flagged as having attachments, as for any blob (spec 7).
        XCTAssertEqual(try db.record(forDocumentID: hotel.id!, in: hotels.keyStore)?.flags.contains(.hasAttachments), true)
    }

    func testDocumentAsDecodesWhatWasSaved() throws {
        let hotel = Hotel(name: "Harbour Inn")
        hotel.phone = "+44 117"
        hotel.logo = Data("logo".utf8)
        hotel.brochure = Blob(contentType: "application/pdf", data: Data("%PDF".utf8))
        hotel.website = URL(string: "https://example.com")
        try hotels.save(from: hotel)

        let read = try XCTUnwrap(hotels.document(id: hotel.id!, as: Hotel.self))
        XCTAssertEqual(read.id, hotel.id)
        XCTAssertEqual(read.$id.revisionID, hotel.$id.revisionID)
        XCTAssertEqual(read.name, "Harbour Inn")
        XCTAssertEqual(read.opened, hotel.opened)
        XCTAssertEqual(read.address, hotel.address)
        XCTAssertEqual(read.reviews, hotel.reviews)
        XCTAssertEqual(read.tags, hotel.tags)
        XCTAssertEqual(read.rating, 4.5)
        XCTAssertEqual(read.rooms, 42)
        XCTAssertTrue(read.petsAllowed)
        XCTAssertEqual(read.category, .boutique)
        XCTAssertEqual(read.phone, "+44 117")
        XCTAssertNil(read.nickname)
        XCTAssertEqual(read.logo, Data("logo".utf8))
        XCTAssertEqual(read.brochure?.content, Data("%PDF".utf8))
        XCTAssertEqual(read.brochure?.digest, hotel.brochure?.digest)
        XCTAssertEqual(read.website, hotel.website)
        XCTAssertEqual(read.scores, ["clean": 9, "staff": 8])
        XCTAssertEqual(read.corrections, [1, nil, 3])

        XCTAssertNil(try hotels.document(id: "nope", as: Hotel.self))
    }

    func testIntegralDoublesAndLooseNumbersDecode() throws {
        // Fleece stores 5.0 as the integer 5; a Double property still reads it.
        let hotel = Hotel(name: "Round")
        hotel.rating = 5
        try hotels.save(from: hotel)
        XCTAssertEqual(try hotels.document(id: hotel.id!, as: Hotel.self)?.rating, 5)

        // A document written through the 2.x API decodes too; a wrong type is a DecodingError.
        try hotels.save(document: MutableDocument(id: "typed").setValue("ten", forKey: "text"))
        XCTAssertEqual(try hotels.document(id: "typed", as: Note.self)?.text, "ten")
        try hotels.save(document: MutableDocument(id: "wrong").setValue(10, forKey: "text"))
        XCTAssertThrowsError(try hotels.document(id: "wrong", as: Note.self)) { error in
            guard case DecodingError.typeMismatch(_, let context)? = error as? DecodingError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["text"])
        }
        try hotels.save(document: MutableDocument(id: "missing"))
        XCTAssertThrowsError(try hotels.document(id: "missing", as: Note.self)) { error in
            guard case DecodingError.keyNotFound(let key, _)? = error as? DecodingError else { return XCTFail("\(error)") }
            XCTAssertEqual(key.stringValue, "text")
        }
    }

    func testExplicitIDAndExistingDocument() throws {
        let note = Note(id: "note-1", text: "first")
        try hotels.save(from: note)
        XCTAssertEqual(note.id, "note-1")
        XCTAssertEqual(try hotels.document(id: "note-1")?.string(forKey: "text"), "first")

        // A new model with the ID of an existing document is saved over the current revision.
        let other = Note(id: "note-1", text: "replaced")
        XCTAssertTrue(try hotels.save(from: other, concurrencyControl: .failOnConflict))
        XCTAssertEqual(try hotels.document(id: "note-1")?.string(forKey: "text"), "replaced")
        XCTAssertEqual(hotels.count, 1)
    }

    func testModelWithoutDocumentIDIsRefused() throws {
        XCTAssertThrowsError(try hotels.save(from: NoID())) { error in
            XCTAssertEqual(CollectionTestSupport.code(error), .invalidParameter)
        }
    }

    func testChangingTheIDOfASavedModelIsRefusedButNewModelsMayChooseOne() throws {
        let note = Note(text: "a")
        note.id = "chosen"       // allowed before saving
        note.id = "chosen-2"
        try hotels.save(from: note)
        XCTAssertEqual(note.id, "chosen-2")
        note.id = "chosen-2"     // the same ID again is fine
    }

    // MARK: Conflicts

    func testFailOnConflictUsesTheRevisionTheModelWasReadAt() throws {
        try hotels.save(from: Note(id: "n", text: "v1"))
        let mine = try XCTUnwrap(hotels.document(id: "n", as: Note.self))
        let theirs = try XCTUnwrap(hotels.document(id: "n", as: Note.self))

        theirs.text = "theirs"
        XCTAssertTrue(try hotels.save(from: theirs, concurrencyControl: .failOnConflict))

        mine.text = "mine"
        let before = mine.$id.revisionID
        XCTAssertFalse(try hotels.save(from: mine, concurrencyControl: .failOnConflict))
        XCTAssertEqual(mine.$id.revisionID, before, "a refused save leaves the model as it was")
        XCTAssertEqual(try hotels.document(id: "n")?.string(forKey: "text"), "theirs")

        XCTAssertTrue(try hotels.save(from: mine, concurrencyControl: .lastWriteWins))
        XCTAssertEqual(try hotels.document(id: "n")?.string(forKey: "text"), "mine")
        XCTAssertEqual(mine.$id.revisionID, try hotels.document(id: "n")?.revisionID)
        // Now tied to the current revision, failOnConflict succeeds.
        mine.text = "mine again"
        XCTAssertTrue(try hotels.save(from: mine, concurrencyControl: .failOnConflict))
    }

    func testConflictHandlerSeesTheStoredModelAndMayMerge() throws {
        try hotels.save(from: Note(id: "n", text: "base"))
        let mine = try XCTUnwrap(hotels.document(id: "n", as: Note.self))
        let theirs = try XCTUnwrap(hotels.document(id: "n", as: Note.self))
        theirs.text = "theirs"
        try hotels.save(from: theirs)

        mine.text = "mine"
        var calls = 0
        let saved = try hotels.save(from: mine) { (new: Note, existing: Note?) in
            calls += 1
            XCTAssertTrue(new === mine)
            XCTAssertEqual(existing?.text, "theirs")
            XCTAssertEqual(existing?.$id.revisionID, theirs.$id.revisionID)
            new.text = "\(existing?.text ?? "") + \(new.text)"
            return true
        }
        XCTAssertTrue(saved)
        XCTAssertEqual(calls, 1)
        XCTAssertEqual(try hotels.document(id: "n")?.string(forKey: "text"), "theirs + mine")
        XCTAssertEqual(mine.$id.revisionID, try hotels.document(id: "n")?.revisionID)

        // No conflict: the handler is not called.
        mine.text = "again"
        XCTAssertTrue(try hotels.save(from: mine) { _, _ in XCTFail("no conflict"); return false })

        // Refusing keeps the stored document.
        theirs.text = "stale"
        XCTAssertFalse(try hotels.save(from: theirs) { _, existing in existing?.text == "never" })
        XCTAssertEqual(try hotels.document(id: "n")?.string(forKey: "text"), "again")
    }

    func testConflictWithADeletedDocumentPassesNil() throws {
        try hotels.save(from: Note(id: "n", text: "base"))
        let mine = try XCTUnwrap(hotels.document(id: "n", as: Note.self))
        try hotels.delete(document: try XCTUnwrap(hotels.document(id: "n")))
        var sawNil = false
        XCTAssertTrue(try hotels.save(from: mine) { _, existing in sawNil = existing == nil; return true })
        XCTAssertTrue(sawNil)
        XCTAssertEqual(try hotels.document(id: "n")?.string(forKey: "text"), "base")
    }

    // MARK: Delete and purge

    func testDeleteForModel() throws {
        let note = Note(text: "bye")
        try hotels.save(from: note)
        let id = try XCTUnwrap(note.id)
        let stale = try XCTUnwrap(hotels.document(id: id, as: Note.self))
        note.text = "changed"
        try hotels.save(from: note)

        XCTAssertFalse(try hotels.delete(for: stale, concurrencyControl: .failOnConflict))
        XCTAssertNotNil(try hotels.document(id: id))
        XCTAssertTrue(try hotels.delete(for: note, concurrencyControl: .failOnConflict))
        XCTAssertNil(try hotels.document(id: id))
        XCTAssertEqual(try db.documentIncludingDeleted(withID: id, in: hotels.keyStore)?.isDeleted, true)
        XCTAssertEqual(note.$id.revisionID, try db.documentIncludingDeleted(withID: id, in: hotels.keyStore)?.revisionID)

        XCTAssertThrowsError(try hotels.delete(for: Note(text: "never saved"))) { error in
            XCTAssertEqual(CollectionTestSupport.code(error), .notFound)
        }
        // A model from a query row (no revision) deletes the current revision.
        try hotels.save(from: Note(id: "q", text: "from a row"))
        let row = try XCTUnwrap(db.createQuery("SELECT meta().id AS id, text FROM travel.hotels WHERE meta().id = 'q'")
            .execute().next())
        try hotels.delete(for: try row.data(as: Note.self))
        XCTAssertNil(try hotels.document(id: "q"))
    }

    func testPurgeForModel() throws {
        let note = Note(text: "gone")
        try hotels.save(from: note)
        let id = try XCTUnwrap(note.id)
        try hotels.purge(for: note)
        XCTAssertNil(try db.documentIncludingDeleted(withID: id, in: hotels.keyStore))
        XCTAssertEqual(note.id, id)
        XCTAssertNil(note.$id.revisionID)
        XCTAssertThrowsError(try hotels.purge(for: note)) { XCTAssertEqual(CollectionTestSupport.code($0), .notFound) }
        XCTAssertThrowsError(try hotels.purge(for: Note(text: "x"))) { XCTAssertEqual(CollectionTestSupport.code($0), .notFound) }
        // Saving the purged model creates the document anew.
        XCTAssertTrue(try hotels.save(from: note, concurrencyControl: .failOnConflict))
        XCTAssertTrue(try hotels.document(id: id)?.revisionID?.hasPrefix("1-") == true)
    }

    // MARK: Query results

    func testResultDataAsAndDataKey() throws {
        for (i, city) in ["Bath", "Bristol", "Cardiff"].enumerated() {
            let hotel = Hotel(name: "H\(i)")
            hotel.address.city = city
            hotel.rooms = 10 * (i + 1)
            if i == 1 { hotel.brochure = Blob(contentType: "text/plain", data: Data("Bristol brochure".utf8)) }
            try hotels.save(from: hotel)
        }
        struct Summary: Decodable, Equatable {
            let name: String
            let city: String
            let rooms: Int
            let big: Bool
        }
        let query = try db.createQuery("""
            SELECT name, address.city AS city, rooms, rooms > 15 AS big FROM travel.hotels ORDER BY name
            """)
        let summaries = try query.execute().data(as: Summary.self)
        XCTAssertEqual(summaries, [Summary(name: "H0", city: "Bath", rooms: 10, big: false),
                                   Summary(name: "H1", city: "Bristol", rooms: 20, big: true),
                                   Summary(name: "H2", city: "Cardiff", rooms: 30, big: true)])

        // `* AS data` with dataKey: the whole model, its ID from the `id` column.
        let all = try db.createQuery("SELECT meta().id AS id, * AS data FROM travel.hotels ORDER BY name")
            .execute().data(as: Hotel.self, dataKey: "data")
        XCTAssertEqual(all.map(\.name), ["H0", "H1", "H2"])
        XCTAssertEqual(all.map(\.address.city), ["Bath", "Bristol", "Cardiff"])
        XCTAssertEqual(Set(all.compactMap(\.id)), Set(try allIDs()))
        XCTAssertNil(all[0].$id.revisionID, "a row carries no revision")
        XCTAssertEqual(all[0].opened, Date(timeIntervalSince1970: 1_600_000_000.125))

        // A model decoded from a row saves over the current revision.
        all[0].rooms = 11
        XCTAssertTrue(try hotels.save(from: all[0], concurrencyControl: .failOnConflict))
        XCTAssertEqual(try hotels.document(id: all[0].id!, as: Hotel.self)?.rooms, 11)

        // One row, by column names.
        let row = try XCTUnwrap(db.createQuery("SELECT meta().id AS id, * AS data FROM travel.hotels WHERE name = 'H1'").execute().next())
        let h1 = try row.data(as: Hotel.self, dataKey: "data")
        XCTAssertEqual(h1.address.city, "Bristol")
        XCTAssertEqual(h1.brochure?.content, Data("Bristol brochure".utf8), "a row's blobs read from the blob store")
        XCTAssertThrowsError(try row.data(as: Hotel.self, dataKey: "nope")) { error in
            guard case DecodingError.keyNotFound? = error as? DecodingError else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try row.data(as: Hotel.self)) { error in
            XCTAssertTrue(error is DecodingError, "\(error)")
        }
    }

    private func allIDs() throws -> [String] {
        try db.createQuery("SELECT meta().id FROM travel.hotels").execute().compactMap { $0.string(at: 0) }
    }

    // MARK: Other coders

    func testModelsStillWorkWithJSONCoders() throws {
        let hotel = Hotel(name: "JSON Inn")
        try hotels.save(from: hotel)
        let json = try JSONEncoder().encode(hotel)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: json) as? [String: Any])
        XCTAssertEqual(object["id"] as? String, hotel.id)
        let back = try JSONDecoder().decode(Hotel.self, from: json)
        XCTAssertEqual(back.id, hotel.id)
        XCTAssertNil(back.$id.revisionID)

        // A missing ID key decodes as nil.
        let note = try JSONDecoder().decode(Note.self, from: Data(#"{"text":"hi"}"#.utf8))
        XCTAssertNil(note.id)
        XCTAssertEqual(note.text, "hi")

        // Blobs carry their metadata through JSON.
        let blob = Blob(contentType: "text/plain", data: Data("abc".utf8))
        let blobJSON = try JSONEncoder().encode(blob)
        let decoded = try JSONDecoder().decode(Blob.self, from: blobJSON)
        XCTAssertEqual(decoded.digest, blob.digest)
        XCTAssertEqual(decoded.length, 3)
        XCTAssertEqual(decoded.contentType, "text/plain")
    }

    func testModelsOnTheDefaultCollectionAndInheritance() throws {
        class Base: Codable {
            @DocumentID var id: String?
            var kind = "base"
        }
        final class Derived: Base {
            var extra = 7
            private enum CodingKeys: String, CodingKey { case extra }
            override init() { super.init() }
            required init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                extra = try container.decode(Int.self, forKey: .extra)
                try super.init(from: decoder)
            }
            override func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(extra, forKey: .extra)
                try super.encode(to: encoder)
            }
        }
        let collection = try db.defaultCollection()
        let model = Derived()
        try collection.save(from: model)
        let id = try XCTUnwrap(model.id, "the @DocumentID of a superclass is found")
        let doc = try XCTUnwrap(db.document(withID: id))
        XCTAssertEqual(Set(doc.keys), ["kind", "extra"])
        let read = try XCTUnwrap(collection.document(id: id, as: Derived.self))
        XCTAssertEqual(read.extra, 7)
        XCTAssertEqual(read.kind, "base")
        XCTAssertEqual(read.id, id)
    }
}
