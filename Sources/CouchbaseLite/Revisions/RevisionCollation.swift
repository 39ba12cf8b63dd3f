import CCollation

/// The REVID collation (spec 6.9) for comparisons made in Swift.
enum RevisionCollation {
    static func compare(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                Int(cbl_revid_collate(pa.baseAddress, pa.count, pb.baseAddress, pb.count))
            }
        }
    }
}
