import CouchbaseLite
import CouchbaseLiteUpgrade
import Foundation

/// The data the tour queries: a 1.x app's contacts database, written with the 1.x API and then
/// converted to the 2.x format, as an app moving to 2.x/3.x does on its first launch.
enum ContactsDatabase {
    static let name = "contacts"

    /// Writes the 1.x database into `directory`/legacy and converts it into `directory`;
    /// returns the converted bundle's directory (open it with `Database(name: "contacts", …)`).
    static func createAndUpgrade(in directory: URL) throws -> (legacy: URL, converted: URL, report: UpgradeReport) {
        let legacyDirectory = directory.appendingPathComponent("legacy", isDirectory: true)
        let manager = try CBLManager(directory: legacyDirectory.path)
        let people: [(id: String, name: String, age: Int, city: String)] = [
            ("user-ana", "Ana", 34, "Lyon"), ("user-ben", "Ben", 27, "Paris"), ("user-chloe", "Chloé", 41, "Lyon"),
            ("user-david", "David", 19, "Nantes"), ("user-eva", "Eva", 52, "Paris"), ("user-farid", "Farid", 30, "Lyon"),
            ("user-gina", "Gina", 45, "Paris"),
        ]
        do {
            defer { manager.close() }
            let db = try manager.databaseNamed(name)
            try db.inTransaction {
                for person in people {
                    try db.document(withID: person.id)?.putProperties(
                        ["type": "user", "name": person.name, "age": person.age, "city": person.city])
                }
                try db.document(withID: "note-1")?.putProperties(["type": "note", "owner": "user-ana", "text": "Call Ben"])
                return true
            }
            // An attachment: the converter keeps it under _attachments, as a 2.x blob.
            try db.document(withID: "user-ana")?.update { rev in
                rev.setAttachmentNamed("avatar", withContentType: "image/png", content: Data(repeating: 0x89, count: 64))
                return true
            }
        }

        let legacy = legacyDirectory.appendingPathComponent("\(name).cblite2", isDirectory: true)
        let converted = directory.appendingPathComponent("\(name).cblite2", isDirectory: true)
        let report = try DatabaseUpgrader(source: legacy, destination: converted).run()
        return (legacy, converted, report)
    }
}
