import Foundation
import XCTest
@testable import CouchbaseLiteSwift

/// The `unicodesn` tokenizer LiteCore's FTS tables name: its Snowball English stemmer, and its
/// tokens as SQLite's FTS machinery sees them (through an `fts3tokenize` table).
final class FullTextTokenizerTests: XCTestCase {
    private var directory: URL?
    private var database: Database?

    override func setUpWithError() throws {
        let dir = try QueryTestSupport.temporaryDirectory()
        directory = dir
        database = try Database(name: "tokens", config: DatabaseConfiguration(directory: dir.path))
    }

    override func tearDownWithError() throws {
        try database?.close()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    /// (token, start, end, position) of `text` under `tokenize=unicodesn <arguments>`.
    private func tokens(_ text: String, _ arguments: String = "") throws -> [String] {
        let db = try XCTUnwrap(database)
        return try db.withOpenFile { file in
            try file.connection.execute("DROP TABLE IF EXISTS temp.tok")
            try file.connection.execute("CREATE VIRTUAL TABLE temp.tok USING fts3tokenize(unicodesn\(arguments.isEmpty ? "" : ", " + arguments))")
            let stmt = try file.connection.prepare("SELECT token, start, \"end\", position FROM temp.tok WHERE input = ?")
            try stmt.bind(text, at: 1)
            var out: [String] = []
            while try stmt.step() { out.append("\(stmt.string(0) ?? "")@\(stmt.int64(1))-\(stmt.int64(2))#\(stmt.int64(3))") }
            return out
        }
    }

    private func words(_ text: String, _ arguments: String = "") throws -> [String] {
        try tokens(text, arguments).map { String($0.prefix { $0 != "@" }) }
    }

    /// Words and their stems as the Snowball English algorithm defines them (its published
    /// examples and vocabulary), covering every step and the irregular forms.
    func testSnowballEnglishStems() {
        let cases: [(String, String)] = [
            ("running", "run"), ("runs", "run"), ("ran", "ran"), ("runner", "runner"),
            ("caresses", "caress"), ("ponies", "poni"), ("ties", "tie"), ("cats", "cat"), ("gas", "gas"),
            ("gaps", "gap"), ("kiwis", "kiwi"), ("this", "this"), ("was", "was"),
            ("consign", "consign"), ("consigned", "consign"), ("consigning", "consign"),
            ("consignment", "consign"), ("consist", "consist"), ("consisted", "consist"),
            ("consistency", "consist"), ("consistent", "consist"), ("consistently", "consist"),
            ("hopping", "hop"), ("hoping", "hope"), ("filing", "file"), ("fitted", "fit"),
            ("agreed", "agre"), ("feed", "feed"), ("cry", "cri"), ("by", "by"), ("say", "say"),
            ("happiness", "happi"), ("sensational", "sensat"), ("controlling", "control"),
            ("argument", "argument"), ("quickly", "quick"), ("friendly", "friend"), ("knightly", "knight"),
            ("generously", "generous"), ("generation", "generat"), ("universities", "univers"),
            ("national", "nation"),
            // Irregular forms (Snowball's exception lists).
            ("dying", "die"), ("lying", "lie"), ("skies", "sky"), ("skis", "ski"), ("news", "news"),
            ("bias", "bias"), ("atlas", "atlas"), ("early", "earli"), ("only", "onli"), ("gently", "gentl"),
            ("proceed", "proceed"), ("exceed", "exceed"), ("succeed", "succeed"), ("herring", "herring"),
            // Initial y and y after a vowel are consonants.
            ("yelling", "yell"), ("playing", "play"), ("enjoyed", "enjoy"),
            ("a", "a"), ("", ""),
        ]
        for (word, stem) in cases {
            XCTAssertEqual(DataFile.englishStem(word), stem, word)
        }
    }

    /// 2,091 dictionary words against the Snowball reference implementation's stems.
    func testSnowballEnglishReferenceVocabulary() {
        var checked = 0
        for line in SnowballEnglishVocabulary.pairs.split(separator: "\n") {
            let parts = line.split(separator: " ")
            XCTAssertEqual(parts.count, 2, String(line))
            XCTAssertEqual(DataFile.englishStem(String(parts[0])), String(parts[1]), String(parts[0]))
            checked += 1
        }
        XCTAssertEqual(checked, 2091)
    }

    func testTokensAreFoldedAndDiacriticsRemovedByDefault() throws {
        XCTAssertEqual(try tokens("Hello, Wörld! café-au-lait"),
                       ["hello@0-5#0", "world@7-13#1", "cafe@15-20#2", "au@21-23#3", "lait@24-28#4"])
        XCTAssertEqual(try words("Ça ÉTÉ naïve Straße 42 x²"), ["ca", "ete", "naive", "straße", "42", "x²"])
        // A combining mark stays inside its word (and is dropped with the diacritics).
        XCTAssertEqual(try words("cafe\u{301} bar"), ["cafe", "bar"])
        XCTAssertEqual(try words("cafe\u{301} bar", "\"remove_diacritics=0\""), ["cafe\u{301}", "bar"])
    }

    /// unicodesn splits, folds and strips like SQLite's unicode61 (the tokenizer it extends) over
    /// the Latin, Greek, Cyrillic, Hebrew, Arabic, Devanagari, punctuation, kana, CJK and Hangul
    /// ranges; the code points left out are those whose Unicode data changed after SQLite's tables.
    func testTokensAgreeWithSQLitesUnicode61() throws {
        let db = try XCTUnwrap(database)
        let ranges: [ClosedRange<UInt32>] = [0x21...0x24F, 0x370...0x52F, 0x590...0x6FF, 0x900...0x97F, 0x1E00...0x1FFF,
                                             0x2000...0x206F, 0x3040...0x30FF, 0x4E00...0x4FFF, 0xAC00...0xADFF]
        let newerUnicode: Set<UInt32> = [0x37F, 0x528, 0x52A, 0x52C, 0x52E, 0x605, 0x61C, 0x61D, 0x2066, 0x2067, 0x2068, 0x2069]
        try db.withOpenFile { file in
            let c = file.connection
            for removeDiacritics in ["0", "1"] {
                try c.execute("DROP TABLE IF EXISTS temp.ours; DROP TABLE IF EXISTS temp.sqlite")
                try c.execute("CREATE VIRTUAL TABLE temp.ours USING fts3tokenize(unicodesn, \"remove_diacritics=\(removeDiacritics)\")")
                try c.execute("CREATE VIRTUAL TABLE temp.sqlite USING fts3tokenize(unicode61, \"remove_diacritics=\(removeDiacritics)\")")
                let ours = try c.prepare("SELECT group_concat(token, '|') FROM temp.ours WHERE input = ?")
                let theirs = try c.prepare("SELECT group_concat(token, '|') FROM temp.sqlite WHERE input = ?")
                var compared = 0
                for range in ranges {
                    for code in range where !newerUnicode.contains(code) {
                        guard let scalar = Unicode.Scalar(code) else { continue }
                        let text = "x\(Character(scalar))y ABC\(Character(scalar))"
                        try ours.bind(text, at: 1)
                        try theirs.bind(text, at: 1)
                        _ = try ours.step()
                        _ = try theirs.step()
                        XCTAssertEqual(ours.string(0), theirs.string(0), String(format: "U+%04X remove_diacritics=%@", code, removeDiacritics))
                        ours.reset()
                        theirs.reset()
                        compared += 1
                    }
                }
                XCTAssertEqual(compared, 3_331)
            }
        }
    }

    func testDiacriticsKeptWhenAsked() throws {
        XCTAssertEqual(try words("Crème BRÛLÉE", "\"remove_diacritics=0\""), ["crème", "brûlée"])
    }

    func testNonLatinScriptsAreWords() throws {
        XCTAssertEqual(try words("Привет мир 東京タワー"), ["привет", "мир", "東京タワー"])
    }

    func testStopWordsAndStemming() throws {
        // Stop words leave no position behind, as in LiteCore's tokenizer.
        XCTAssertEqual(try tokens("The runners were running to the races", "\"stopwords=en\", \"stemmer=en\""),
                       ["runner@4-11#0", "run@17-24#1", "race@32-37#2"])
        XCTAssertEqual(try words("le chat et la souris", "\"stopwords=fr\""), ["chat", "souris"])
        XCTAssertEqual(try words("alpha beta gamma", "\"stopwordlist=beta gamma\""), ["alpha"])
        // Languages without stop-word lists, and stemmers LiteCore has but this package lacks,
        // tokenize without them.
        XCTAssertEqual(try words("le chats", "\"stopwords=de\", \"stemmer=fr\""), ["le", "chats"])
    }

    func testUnknownOptionsAreRejected() throws {
        XCTAssertThrowsError(try tokens("x", "\"stemmer=klingon\""))
        XCTAssertThrowsError(try tokens("x", "\"frobnicate=1\""))
    }

    func testTokenCharactersAndSeparatorsCanBeChanged() throws {
        XCTAssertEqual(try words("e-mail x_y", "\"tokenchars=-\""), ["e-mail", "x", "y"])
        XCTAssertEqual(try words("abcxdef", "\"separators=x\""), ["abc", "def"])
    }
}
