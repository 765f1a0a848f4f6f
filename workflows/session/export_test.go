package session

// Under test a move of the state that contract.SessionMoves lacks
// panics: every unit test and every recorded history replayed here holds
// the table.
func init() { strictMoves = true }
