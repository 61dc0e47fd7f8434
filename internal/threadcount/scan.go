package threadcount

// Rows is a query result being read, as database/sql and pgx both give
// one: both stores read participants from the same columns.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanParticipants calls each with rows of (pubkey, created_at) until it
// returns false. The caller closes rows.
func ScanParticipants(rows Rows, each func(Participant) bool) error {
	for rows.Next() {
		var p Participant
		if err := rows.Scan(&p.PubKey, &p.At); err != nil {
			return err
		}
		if !each(p) {
			return nil
		}
	}
	return rows.Err()
}

// ScanAuthors calls each with rows of (pubkey, created_at of the newest,
// how many), the authors of a subtree. The caller closes rows.
func ScanAuthors(rows Rows, each func(p Participant, n int64)) error {
	for rows.Next() {
		var (
			p Participant
			n int64
		)
		if err := rows.Scan(&p.PubKey, &p.At, &n); err != nil {
			return err
		}
		each(p, n)
	}
	return rows.Err()
}
