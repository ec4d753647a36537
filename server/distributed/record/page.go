package record

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/seatd/seatd/server"
)

// cursor is the position a page ends at: the sort key of its last item.
// Page tokens are its JSON, base64url-encoded: opaque to clients.
type cursor struct {
	At int64  `json:"t,omitempty"` // unix microseconds, for lists ordered by time
	ID string `json:"i"`
}

func (c cursor) time() time.Time { return usTime(c.At) }

func encodeToken(c cursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeToken reads a page token; an empty token is the first page (nil).
func decodeToken(tok string) (*cursor, error) {
	if tok == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.ID == "" {
		return nil, server.Invalid("page_token", "page token is not valid")
	}
	return &c, nil
}

// pageOf cuts the one-item look-ahead off a list read with LIMIT size+1 and
// returns the token of the next page ("" on the last page).
func pageOf[T any](items []T, size int, key func(T) cursor) ([]T, string) {
	if len(items) <= size {
		return items, ""
	}
	items = items[:size]
	return items, encodeToken(key(items[size-1]))
}
