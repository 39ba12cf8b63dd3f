import XCTest
final class PlaceholderCouchbaseLiteTests: XCTestCase { func testNothing() {} }
