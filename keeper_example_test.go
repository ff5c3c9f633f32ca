package wardpool_test

import (
	"context"
	"fmt"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/pool"
)

type session struct{ id int }

func ExampleKeeper() {
	n := 0
	k, err := wardpool.NewKeeper(wardpool.Config[*session]{
		Limits: pool.Limits{Size: 4, Idle: 4, Keep: time.Minute},
		Dial: func(ctx context.Context) (*session, error) {
			n++
			return &session{id: n}, nil
		},
		Close: func(s *session) error { return nil },
	})
	if err != nil {
		panic(err)
	}
	defer k.Close(context.Background())

	ctx := context.Background()
	loan, err := k.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("lent session", loan.Value().id)
	loan.Release()
	loan.Release() // a second release is a no-op

	err = k.AcquireFunc(ctx, func(s *session) error {
		fmt.Println("reused session", s.id)
		return nil
	})
	s := k.Stats()
	fmt.Println(err, s.Made, s.Idle, s.DoubleReleases)
	// Output:
	// lent session 1
	// reused session 1
	// <nil> 1 1 1
}
