import CouchbaseLite
import Foundation

/// The "shipped" sample database: what a 1.x shop app left on a device. Users and orders as
/// documents, written through the 1.x API, with two views the app's map functions indexed.
/// The data has what makes views and N1QL disagree: mixed-case and accented names, a null name,
/// a user without a name, booleans, a deleted order.
enum ShopDatabase {
    static let name = "shop"

    /// The app's views, as it registered them at launch. Only their index (the emitted rows)
    /// is in the file; the map functions themselves live in the app's code.
    static func registerViews(in db: CBLDatabase) {
        // Users by name, with their e-mail address as the value (the app's address book).
        // Users without a name (missing or null) get no row.
        db.viewNamed("users/byName").setMapBlock({ doc, emit in
            if doc["type"] as? String == "user", let name = doc["name"] as? String {
                emit(name, doc["email"])
            }
        }, version: "1")

        // Orders by [customer, date] with their total; the reduce sums the totals, so
        // groupLevel = 1 gives each customer's spending.
        db.viewNamed("orders/byCustomer").setMapBlock({ doc, emit in
            if doc["type"] as? String == "order", let customer = doc["customer"], let date = doc["date"] {
                emit([customer, date], doc["total"])
            }
        }, reduce: { _, values, _ in
            CBLView.totalValues(values)
        }, version: "1")
    }

    /// Creates `shop.cblite2` in `directory` as the 1.x app would have: documents saved, then the
    /// views queried (which is when 1.x indexes them). Returns the bundle's URL.
    static func create(in directory: URL) throws -> URL {
        let manager = try CBLManager(directory: directory.path)
        defer { manager.close() }
        let db = try manager.databaseNamed(name)

        let users: [(id: String, properties: [String: Any])] = [
            ("user-alice", ["type": "user", "name": "alice", "email": "alice@example.com", "vip": true]),
            ("user-bob", ["type": "user", "name": "Bob", "email": "bob@example.com", "vip": false]),
            ("user-carol", ["type": "user", "name": "carol", "email": "carol@example.com", "vip": false]),
            ("user-emile", ["type": "user", "name": "Émile", "email": "emile@example.fr", "vip": true]),
            ("user-zack", ["type": "user", "name": "Zack", "email": "zack@example.com", "vip": false]),
            ("user-guest", ["type": "user", "name": NSNull(), "email": "guest@example.com", "vip": false]),
            ("user-import", ["type": "user", "email": "import@example.com"]),   // no name at all
        ]
        let orders: [(id: String, properties: [String: Any])] = [
            ("order-1", ["type": "order", "customer": "alice", "date": "2016-03-01", "total": 12.5, "paid": true]),
            ("order-2", ["type": "order", "customer": "Bob", "date": "2016-03-02", "total": 40, "paid": true]),
            ("order-3", ["type": "order", "customer": "alice", "date": "2016-04-11", "total": 7.25, "paid": false]),
            ("order-4", ["type": "order", "customer": "Émile", "date": "2016-05-20", "total": 99, "paid": true]),
            ("order-5", ["type": "order", "customer": "Zack", "date": "2016-06-01", "total": 15, "paid": false]),
            ("order-6", ["type": "order", "customer": "carol", "date": "2016-06-03", "total": 3, "paid": true]),
            ("order-7", ["type": "order", "customer": "Bob", "date": "2016-07-14", "total": 60, "paid": false]),
        ]
        // One transaction: one commit, one change notification, as apps imported data in 1.x.
        try db.inTransaction {
            for (id, properties) in users + orders {
                guard let doc = db.document(withID: id) else { return false }
                try doc.putProperties(properties)
            }
            return true
        }
        // A receipt attached to an order, and an order the customer cancelled (deleted).
        try db.document(withID: "order-2")?.update { rev in
            rev.setAttachmentNamed("receipt.txt", withContentType: "text/plain", content: Data("Bob: 2 items, 40.00".utf8))
            return true
        }
        try db.document(withID: "order-7")?.delete()

        // The app queried its views, so their indexes are up to date in the file.
        registerViews(in: db)
        for view in db.allViews {
            try view.updateIndex()
        }
        return directory.appendingPathComponent("\(name).cblite2", isDirectory: true)
    }
}
