package chaos

import (
	"testing"

	"github.com/redcoord/redcoord/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
