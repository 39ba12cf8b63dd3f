import XCTest
final class PlaceholderJSONCoreTests: XCTestCase { func testNothing() {} }
