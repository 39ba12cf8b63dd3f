// swift-tools-version: 6.0
// Couchbase Lite 1.x (SQLite storage, map/reduce views) for Linux, with a bridge to the 2.x world.
import PackageDescription

let package = Package(
    name: "CouchbaseLite",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "CouchbaseLite", targets: ["CouchbaseLite"]),
        .library(name: "CouchbaseLiteSwift", targets: ["CouchbaseLiteSwift"]),
        .library(name: "CouchbaseLiteUpgrade", targets: ["CouchbaseLiteUpgrade"]),
        .library(name: "CouchbaseLiteListener", targets: ["CouchbaseLiteListener"]),
        .library(name: "CouchbaseLiteJavaScript", targets: ["CouchbaseLiteJavaScript"]),
        .executable(name: "cbl", targets: ["cbl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Combine's API on Linux (Combine exists on Apple platforms only): the 2.x/3.x change publishers.
        .package(url: "https://github.com/OpenCombine/OpenCombine.git", from: "0.14.0"),
        // `swift package generate-documentation` (the DocC catalogs in Sources/*/*.docc; .ci/run builds them).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System libraries (Debian: libsqlite3-dev, zlib1g-dev).
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),

        // Collation: the 1.x JSON and REVID collations over raw text, and the 2.x/3.x Unicode
        // collator. ICU headers stay in the .c files.
        .target(name: "CCollation", linkerSettings: [.linkedLibrary("icui18n"), .linkedLibrary("icuuc")]),
        // Full text: the `unicodesn` FTS tokenizer with its Snowball English stemmer (ICU's
        // character properties and normalization only).
        .target(name: "CFullText", linkerSettings: [.linkedLibrary("icuuc")]),
        // The header of ICU's plain string comparison (defined in CCollation), the baseline the
        // collation benchmark and tests measure CCollation against; in no product.
        .target(name: "CCollationBaseline", dependencies: ["CCollation"]),

        // Proleptic Gregorian day arithmetic, shared by the 1.x date strings and the N1QL date functions.
        .target(name: "CivilDate"),

        // Fast JSON reader and canonical (1.x) JSON writer shared by every layer.
        .target(name: "JSONCore", dependencies: [.product(name: "OrderedCollections", package: "swift-collections")]),

        // The SQLite C functions as a table, for the system libsqlite3 or SQLCipher (Debian: libsqlcipher0,
        // loaded at run time with RTLD_LOCAL|RTLD_DEEPBIND, only for encrypted databases).
        .target(name: "CSQLiteAPI", dependencies: ["CSQLite"], linkerSettings: [.linkedLibrary("dl")]),

        // The JavaScriptCore C functions as a table, loaded at run time (Debian: libjavascriptcoregtk-4.1-0)
        // on the first JavaScript design-document function: building needs no JavaScriptCore package.
        .target(name: "CJavaScriptCoreAPI", linkerSettings: [.linkedLibrary("dl")]),

        // The `sha1-<base64>` attachment/blob digest, parsed and written the same way by the 1.x
        // (CouchbaseLite) and 2.x (CouchbaseLiteSwift) sides, neither of which depends on the other.
        .target(name: "BlobDigest"),

        // Thin Swift layer over the SQLite C API: the only code that calls sqlite3_*.
        .target(name: "SQLiteKit", dependencies: ["CSQLite", "CSQLiteAPI"]),

        // The Fleece-reading SQL functions of 2.x queries (fl_value, fl_each, …) in C, reading row
        // bodies in place; the Swift side registers them and answers the cases they hand back.
        .target(name: "CFleeceSQL", dependencies: ["CSQLiteAPI"]),

        // Fleece, the binary format 2.x/3.x store document bodies in: encoder (also straight
        // from JSON text), shared keys, and a validating zero-copy decoder; also the package's one
        // LEB128 varint, which the 2.x rev trees and revision IDs (CouchbaseLiteSwift) read.
        .target(name: "Fleece", dependencies: ["JSONCore"]),

        // The 1.x API.
        .target(
            name: "CouchbaseLite",
            dependencies: [
                "SQLiteKit", "CCollation", "CivilDate", "JSONCore", "CZlib", "BlobDigest",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),

        // The 2.x-style API over the 2.x/3.x file format (Database, Document, Blob). CFullText is
        // the `unicodesn` full-text tokenizer; OpenCombine carries the change publishers.
        .target(
            name: "CouchbaseLiteSwift",
            dependencies: ["SQLiteKit", "Fleece", "JSONCore", "CCollation", "CFullText", "CFleeceSQL", "CivilDate", "BlobDigest",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "OpenCombine", package: "OpenCombine")]
        ),

        // The 1.x → 2.x converter (what 2.x does on open, with a report).
        .target(
            name: "CouchbaseLiteUpgrade",
            dependencies: ["CouchbaseLite", "CouchbaseLiteSwift", "Fleece", "SQLiteKit", "JSONCore"]
        ),

        // The REST listener: a CouchDB-compatible HTTP server over a CBLManager (1.x CBLListener).
        .target(
            name: "CouchbaseLiteListener",
            dependencies: [
                "CouchbaseLite", "JSONCore", "CCollation",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                // `_changes?feed=websocket` (the 1.x listener's and Sync Gateway 1.x's WebSocket feed).
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                // PBKDF2: CouchDB's password hashes (`_users`, admins).
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // `Content-Length: 0` on 304 answers (NotModifiedContentLength.swift).
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // JavaScript view, filter and validation compilers for design documents (1.x's CBLJSViewCompiler).
        .target(
            name: "CouchbaseLiteJavaScript",
            dependencies: ["CouchbaseLite", "CJavaScriptCoreAPI", "JSONCore",
                           .product(name: "Logging", package: "swift-log")]
        ),

        // Command-line tool.
        .executableTarget(
            name: "cbl",
            dependencies: [
                "CouchbaseLite", "CouchbaseLiteListener", "CouchbaseLiteSwift", "CouchbaseLiteUpgrade",
                "CouchbaseLiteJavaScript",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // Benchmarks (run with `swift run -c release CBLBenchmarks`).
        .executableTarget(
            name: "CBLBenchmarks",
            dependencies: ["CouchbaseLite", "SQLiteKit", "JSONCore", "CCollation", "CCollationBaseline", "CouchbaseLiteSwift", "CouchbaseLiteUpgrade",
                           "CouchbaseLiteListener", "CouchbaseLiteJavaScript", "CBLTestSupport"],
            path: "Benchmarks/CBLBenchmarks"
        ),

        // Small program the durability tests kill with SIGKILL while it writes.
        .executableTarget(
            name: "CBLCrashWriter",
            dependencies: ["CouchbaseLite", "CouchbaseLiteUpgrade", "CBLTestSupport"],
            path: "Tests/CBLCrashWriter"
        ),

        // Samples (Samples/NAME, run with `swift run NAME`): small apps written as a real app's data layer would be.
        .executableTarget(
            name: "TodoLite",
            dependencies: ["CouchbaseLite", "CouchbaseLiteListener"],
            path: "Samples/TodoLite"
        ),
        .executableTarget(
            name: "MigrateAndCompare",
            dependencies: ["CouchbaseLite", "CouchbaseLiteUpgrade"],
            path: "Samples/MigrateAndCompare"
        ),
        .executableTarget(
            name: "QueryTour",
            dependencies: ["CouchbaseLite", "CouchbaseLiteSwift", "CouchbaseLiteUpgrade"],
            path: "Samples/QueryTour"
        ),

        // Helpers shared by the tests, the crash writer and the benchmarks (a seedable PRNG).
        .target(name: "CBLTestSupport", path: "Tests/CBLTestSupport"),

        .testTarget(name: "CCollationTests", dependencies: ["CCollation", "CCollationBaseline", "CBLTestSupport"]),
        .testTarget(name: "JSONCoreTests", dependencies: ["JSONCore", "CBLTestSupport"]),
        .testTarget(name: "FleeceTests", dependencies: ["Fleece", "SQLiteKit", "JSONCore", "CBLTestSupport"]),
        .testTarget(
            name: "CouchbaseLiteTests",
            dependencies: [
                "CouchbaseLite", "SQLiteKit", "JSONCore", "CCollation", "CBLCrashWriter", "CBLTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                // AES._CBC: the encrypted-attachment tests decrypt blob files independently.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                // CrashTrialTests: the listener a killed pull pulls from, and the 1.x → 2.x converter it re-runs.
                "CouchbaseLiteListener", "CouchbaseLiteUpgrade", "CouchbaseLiteSwift",
            ]
        ),
        .testTarget(
            name: "CouchbaseLiteSwiftTests",
            dependencies: ["CouchbaseLiteSwift", "Fleece", "SQLiteKit", "JSONCore", "CBLTestSupport",
                           .product(name: "OpenCombine", package: "OpenCombine")]
        ),
        .testTarget(
            name: "CouchbaseLiteUpgradeTests",
            dependencies: [
                "CouchbaseLiteUpgrade", "CouchbaseLiteSwift", "CouchbaseLite", "Fleece", "SQLiteKit", "JSONCore",
                "CCollation", "cbl", "CBLTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "CouchbaseLiteListenerTests",
            dependencies: ["CouchbaseLiteListener", "CouchbaseLite", "CouchbaseLiteJavaScript", "JSONCore", "SQLiteKit", "cbl", "CBLTestSupport",
                           // The 2.x API: the disk-full tests write through it too.
                           "CouchbaseLiteSwift",
                           "CBLCrashWriter",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl")],
            exclude: ["Resources"]
        ),
    ]
)
