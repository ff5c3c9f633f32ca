package sqlward_test

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/DATA-DOG/go-sqlmock"

	sqlward "github.com/wardpool/wardpool/drivers/sql"
	"github.com/wardpool/wardpool/pool"
)

// dsnConnector turns a driver and a data source name into a
// driver.Connector, for drivers that do not offer one.
type dsnConnector struct {
	drv driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.drv }

// The application keeps its *sql.DB; the Keeper pools underneath. (With
// PostgreSQL the base connector would be pgx's:
// stdlib.GetConnector(*connConfig).)
func ExampleOpenDB() {
	mdb, mock, err := sqlmock.NewWithDSN("example")
	if err != nil {
		panic(err)
	}
	defer mdb.Close()
	mock.ExpectQuery("SELECT 1").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(1))
	mock.ExpectQuery("SELECT 2").WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(2))

	l := pool.DefaultLimits
	l.Size = 4
	db, c, err := sqlward.OpenDB(dsnConnector{mdb.Driver(), "example"}, sqlward.Config{Limits: l})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	var a, b int
	_ = db.QueryRow("SELECT 1").Scan(&a)
	_ = db.QueryRow("SELECT 2").Scan(&b)
	s := c.WardStats()
	fmt.Println(a+b, s.Made, s.Loans, s.Idle)
	// Output: 3 1 2 1
}
