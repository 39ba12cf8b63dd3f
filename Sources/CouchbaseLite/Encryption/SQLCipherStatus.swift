import SQLiteKit

/// Whether SQLCipher, which encrypted databases need, can be loaded; for tools (`cbl doctor`) that
/// import only the product modules.
package typealias SQLCipherStatus = SQLiteKit.SQLCipherStatus
