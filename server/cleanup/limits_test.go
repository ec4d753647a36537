package cleanup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHardLimitIsNeverBelowTheSoftLimit(t *testing.T) {
	t.Parallel()
	c := NewCleaner(countingStore{}, Config{SoftLimit: 2 * time.Second, HardLimit: time.Second}, nil, nil)
	require.Equal(t, 2*time.Second, c.cfg.HardLimit, "raised to the soft limit")
	c = NewCleaner(countingStore{}, Config{SoftLimit: time.Second, HardLimit: 3 * time.Second}, nil, nil)
	require.Equal(t, 3*time.Second, c.cfg.HardLimit, "a larger hard limit is kept")
}
