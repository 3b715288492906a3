//! A partition's rows changed by `ALTER TABLE`: a column added with one value for every row
//! stored, a column dropped, a column renamed. Each builds new chunks and swaps them in only
//! once all are built, so a failure leaves the partition as it was, and scans that hold the
//! old chunks keep reading them.

use super::*;
use crate::types::Field;

impl PartitionData {
    /// Adds column `field` after the last one, holding `fill` in every row stored.
    pub fn add_column(&mut self, field: Field, fill: &Value) -> Result<()> {
        let mut chunks = Vec::with_capacity(self.chunks.len());
        for chunk in &self.chunks {
            let rows = chunk.num_rows();
            let mut columns = chunk.columns().to_vec();
            columns.push(Column::repeat(field.data_type, fill, rows)?);
            chunks.push(Arc::new(Batch::with_row_count(columns, rows)?));
        }
        self.chunks = chunks;
        self.schema.fields.push(field);
        self.types = self.schema.types();
        Ok(())
    }

    /// Drops column `column` (not one of the primary key's) and its values; the columns after
    /// it move one position left.
    pub fn drop_column(&mut self, column: usize) -> Result<()> {
        if column >= self.types.len() || self.primary_key.contains(&column) {
            return Err(Error::Internal(format!(
                "column {column} cannot be dropped from a partition of {} columns with key {:?}",
                self.types.len(),
                self.primary_key
            )));
        }
        let kept: Vec<usize> = (0..self.types.len()).filter(|&c| c != column).collect();
        let chunks = self
            .chunks
            .iter()
            .map(|chunk| Arc::new(chunk.project(&kept)))
            .collect();
        self.chunks = chunks;
        self.schema.fields.remove(column);
        self.types = self.schema.types();
        for k in &mut self.primary_key {
            if *k > column {
                *k -= 1;
            }
        }
        Ok(())
    }

    /// Converts column `column` (not one of the primary key's) to type `to`, each value cast
    /// as `CAST` casts it; a value that does not convert is an error, and the partition is
    /// left as it was.
    pub fn set_column_type(&mut self, column: usize, to: DataType) -> Result<()> {
        if column >= self.types.len() || self.primary_key.contains(&column) {
            return Err(Error::Internal(format!(
                "column {column} cannot change its type in a partition of {} columns with key {:?}",
                self.types.len(),
                self.primary_key
            )));
        }
        let mut chunks = Vec::with_capacity(self.chunks.len());
        for chunk in &self.chunks {
            let mut columns = chunk.columns().to_vec();
            columns[column] = crate::eval::cast_column(&columns[column], to)?;
            chunks.push(Arc::new(Batch::with_row_count(columns, chunk.num_rows())?));
        }
        self.chunks = chunks;
        self.schema.fields[column].data_type = to;
        self.types = self.schema.types();
        Ok(())
    }

    /// Names column `column` `name`.
    pub fn rename_column(&mut self, column: usize, name: &str) -> Result<()> {
        let field = self
            .schema
            .fields
            .get_mut(column)
            .ok_or_else(|| Error::Internal(format!("no column {column} to rename")))?;
        field.name = name.to_string();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition() -> PartitionData {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64),
            Field::new("name", DataType::Utf8),
            Field::new("score", DataType::Int64),
        ]);
        let mut p = PartitionData::new(schema, &[0]);
        let rows: Vec<Vec<Value>> = (0..2500)
            .map(|i| {
                vec![
                    Value::Int(i),
                    Value::Str(format!("n{i}")),
                    Value::Int(i * 10),
                ]
            })
            .collect();
        let batch =
            Batch::from_rows(&[DataType::Int64, DataType::Utf8, DataType::Int64], &rows).unwrap();
        p.insert(&batch).unwrap();
        p
    }

    #[test]
    fn an_added_column_holds_the_fill_in_every_row_and_takes_new_rows() {
        let mut p = partition();
        p.add_column(Field::new("flag", DataType::Boolean), &Value::Bool(true))
            .unwrap();
        assert_eq!(p.schema().len(), 4);
        let rows: Vec<Vec<Value>> = p.chunks().iter().flat_map(|c| c.rows()).collect();
        assert_eq!(rows.len(), 2500);
        assert!(rows.iter().all(|r| r[3] == Value::Bool(true)));
        let new = Batch::from_rows(
            &[
                DataType::Int64,
                DataType::Utf8,
                DataType::Int64,
                DataType::Boolean,
            ],
            &[vec![
                Value::Int(9999),
                Value::Null,
                Value::Null,
                Value::Null,
            ]],
        )
        .unwrap();
        p.insert(&new).unwrap();
        assert_eq!(p.num_rows(), 2501);
        // The key index still answers for the rows stored before.
        assert!(p.insert(&new).is_err(), "the key 9999 is stored once");
    }

    #[test]
    fn a_dropped_column_goes_and_the_key_still_refuses_duplicates() {
        let mut p = partition();
        p.drop_column(1).unwrap();
        assert_eq!(p.schema().len(), 2);
        let rows: Vec<Vec<Value>> = p.chunks().iter().flat_map(|c| c.rows()).collect();
        assert_eq!(rows[7], vec![Value::Int(7), Value::Int(70)]);
        let dup = Batch::from_rows(
            &[DataType::Int64, DataType::Int64],
            &[vec![Value::Int(7), Value::Int(1)]],
        )
        .unwrap();
        assert!(p.insert(&dup).is_err());
        assert!(p.drop_column(0).is_err(), "the key column is not dropped");
    }

    #[test]
    fn a_column_changes_its_type_or_nothing_changes() {
        let mut p = partition();
        p.set_column_type(2, DataType::Float64).unwrap();
        assert_eq!(p.schema().fields[2].data_type, DataType::Float64);
        assert_eq!(p.chunks()[0].row(3)[2], Value::Float(30.0));
        // Text that is not a number: refused, the column keeps its type and values.
        let err = p.set_column_type(1, DataType::Int64).unwrap_err();
        assert!(err.to_string().contains("n0"), "{err}");
        assert_eq!(p.schema().fields[1].data_type, DataType::Utf8);
        assert_eq!(p.chunks()[0].row(0)[1], Value::Str("n0".into()));
        assert!(
            p.set_column_type(0, DataType::Utf8).is_err(),
            "the key keeps its type"
        );
    }

    #[test]
    fn a_renamed_column_keeps_its_values() {
        let mut p = partition();
        p.rename_column(2, "points").unwrap();
        assert_eq!(p.schema().fields[2].name, "points");
        assert!(p.rename_column(3, "x").is_err());
    }
}
