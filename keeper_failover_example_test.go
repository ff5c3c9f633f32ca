package wardpool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

// errReadOnly stands for what a database answers after a failover demoted
// the node a connection was opened to.
var errReadOnly = errors.New("read-only")

// A classifier tells the Keeper what an error means; a Reset verdict,
// acted on with Loan.Reset, retires every session made so far, once per
// generation: three loans failing together reset once, and the sessions
// dialled after are kept.
func ExampleLoan_Reset() {
	var n atomic.Int32
	k, err := wardpool.NewKeeper(wardpool.Config[*session]{
		Limits: pool.Limits{Size: 4},
		Dial: func(context.Context) (*session, error) {
			return &session{id: int(n.Add(1))}, nil
		},
		Close: func(*session) error { return nil },
		Classify: func(err error) (wardpool.Verdict, string) {
			if errors.Is(err, errReadOnly) {
				return wardpool.Reset, "read-only"
			}
			return wardpool.Reuse, ""
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), // the reset's warning
	})
	if err != nil {
		panic(err)
	}
	defer k.Close(context.Background())

	ctx := context.Background()
	var loans []wardpool.Loan[*session]
	for range 3 {
		l, _ := k.Acquire(ctx)
		loans = append(loans, l)
	}
	for _, l := range loans { // each write fails: the node turned read-only
		v, cause := k.Classify(errReadOnly)
		fmt.Println(l.Value().id, v, l.Reset(cause, errReadOnly))
	}
	l, _ := k.Acquire(ctx)
	fmt.Println("then session", l.Value().id)
	l.Release()
	s := k.Stats()
	fmt.Println(s.Resets, s.ResetCauses, s.Idle)
	// Output:
	// 1 reset true
	// 2 reset false
	// 3 reset false
	// then session 4
	// 1 map[read-only:1] 1
}
