import ArgumentParser
import CouchbaseLite
import CouchbaseLiteSwift
import Foundation

/// The exit statuses every `cbl` command uses.
enum ExitStatus {
    /// The command ran and found nothing wrong.
    static let success: Int32 = 0
    /// The command ran fine but found a problem (`check` found damage, a replication stopped on an error).
    static let problemFound: Int32 = 1
    /// Bad usage or input: unknown option, bad path, wrong format, missing view, malformed query.
    static let inputError: Int32 = 2
}

/// An error `cbl` reports as one line, `cbl <command>: error: <message>`, exiting with `status`.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var status: Int32 = ExitStatus.inputError

    init(_ message: String, status: Int32 = ExitStatus.inputError) {
        self.message = message
        self.status = status
    }

    var description: String { message }
}

extension CBLCommand {
    /// Parses the command line, runs the command, and turns every error into one line on standard
    /// error and an exit status from ``ExitStatus`` (never a stack trace or a usage dump).
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        var command: ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            // --help and --version are "errors" that exit cleanly, printing to standard output.
            if exitCode(for: error) == .success { exit(withError: error) }
            let name = subcommandName(in: arguments)
            let hint = name == "cbl" ? "cbl --help" : "\(name) --help"
            fail(command: name, message: "\(message(for: error)) (see '\(hint)')", status: ExitStatus.inputError)
        }
        do {
            try command.run()
        } catch {
            fflush(nil)
            let name = "cbl " + type(of: command)._commandName
            if let code = error as? ExitCode { terminate(code.rawValue) }
            if exitCode(for: error) == .success { exit(withError: error) }
            let (text, status) = describe(error)
            fail(command: name, message: text, status: status)
        }
        fflush(nil)
        terminate(ExitStatus.success)
    }

    /// `cbl <subcommand>` when the arguments name one, else `cbl`.
    private static func subcommandName(in arguments: [String]) -> String {
        let names = Set(configuration.subcommands.map { $0._commandName })
        if let first = arguments.first, names.contains(first) { return "cbl \(first)" }
        return "cbl"
    }

    /// The message and exit status for an error thrown by a command.
    static func describe(_ error: Error) -> (String, Int32) {
        switch error {
        case let failure as CommandFailure: return (failure.message, failure.status)
        case let e as CBLError: return (e.message, ExitStatus.inputError)
        case let e as CouchbaseLiteError: return (e.message, ExitStatus.inputError)
        case let e as N1QLSyntaxError: return (e.message, ExitStatus.inputError)
        case is ValidationError: return (message(for: error), ExitStatus.inputError)
        default:
            if let reason = CBLError.storageFailureMessage(error) {
                return ("the database file cannot be read: \(reason)", ExitStatus.inputError)
            }
            return ((error as? LocalizedError)?.errorDescription ?? "\(error)", ExitStatus.inputError)
        }
    }

    private static func fail(command: String, message: String, status: Int32) -> Never {
        // One line: a message with embedded newlines (SQLite, the parser) is joined.
        let line = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
        FileHandle.standardError.write(Data("\(command): error: \(line)\n".utf8))
        terminate(status)
    }
}

/// Writes a note (not an error) to standard error: `cbl <command>: note: …`.
func note(_ command: String, _ message: String) {
    FileHandle.standardError.write(Data("cbl \(command): note: \(message)\n".utf8))
}

/// Ends the process (outside the command types, whose `exit(withError:)` would shadow libc's `exit`).
func terminate(_ status: Int32) -> Never {
    fflush(nil)
    exit(status)
}
